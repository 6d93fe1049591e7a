/**
 * Heap figures of the window buffer and the step processor. Run by memory.ts in a child with
 * --expose-gc and a fixed 128 MB semi-space.
 *
 * Method:
 * - Retained bytes (per open key, per open window): full gc, heapUsed, build the state, full
 *   gc, heapUsed; the difference over the number of keys or windows. Inputs (decoded values,
 *   key strings, chunks) are made before the first reading, so only the state is counted.
 * - Allocated bytes per add: adds to keys already in the buffer, with values decoded
 *   beforehand; heapUsed after minus before, with no collection in between. The semi-space
 *   is large enough for every add to stay in new space, and a PerformanceObserver counts the
 *   collections that ran inside the interval anyway (then the figure is only a lower bound).
 *   Sums of doubles and sums of small integers are measured apart: V8 keeps small integers
 *   unboxed, while every new double held in a tagged field is a 16-byte heap object.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { fold } from '../src/common/aggregator.js';
import { StepProcessor } from '../src/engine/step-processor.js';
import { WindowBuffer } from '../src/windows/window-buffer.js';
import { replyToParent } from './child.js';
import { buildChunks, corpusShape, type Reading } from './corpus.js';
import { heapAfterFullGc } from './heap.js';
import { engineConfig } from './hot-path/engine.js';
import type { MemoryProbe } from './memory.js';

const heapUsed = heapAfterFullGc('memory-probe');

const keys = Number(process.argv[2]);
const adds = Number(process.argv[3]);
const windows = Math.min(1_000, keys);
const sum = fold((total: number, reading: Reading) => total + reading.value, 0);

function bytesPerOpenKey(): number {
  const readings = Array.from({ length: keys }, (_, i) => ({
    sensor: `sensor-${i}`,
    value: i / 10,
  }));
  const buffer = new WindowBuffer(sum);
  const before = heapUsed();
  for (const reading of readings) buffer.add(reading.sensor, reading);
  const after = heapUsed();
  if (buffer.size !== keys) throw new Error('memory probe: keys lost');
  return (after - before) / keys;
}

function bytesPerOpenWindow(): number {
  const shape = corpusShape(windows, 1);
  const [chunk] = buildChunks({ ...shape, messages: 1 });
  if (chunk === undefined) throw new Error('memory probe: empty corpus');
  const config = engineConfig('tumbling-1m', shape);
  const processors: StepProcessor<Reading, unknown, unknown>[] = [];
  const before = heapUsed();
  for (let i = 0; i < windows; i++) {
    const processor = new StepProcessor(config);
    processor.process(chunk);
    processors.push(processor);
  }
  const after = heapUsed();
  return (after - before) / processors.length;
}

async function bytesPerAdd(
  value: (i: number) => number,
): Promise<{ bytes: number; perSec: number; collections: number }> {
  const distinct = 100_000;
  const readings: Reading[] = Array.from({ length: distinct }, (_, i) => ({
    sensor: `sensor-${i % 100}`,
    value: value(i),
  }));
  const buffer = new WindowBuffer(sum);
  // Steady state: a window has closed before (drain recycles the slots), as in a running job.
  for (const reading of readings) buffer.add(reading.sensor, reading);
  buffer.drain(() => undefined);
  for (const reading of readings) buffer.add(reading.sensor, reading);
  let collections = 0;
  const observer = new PerformanceObserver((list) => {
    collections += list.getEntries().filter((entry) => entry.startTime >= started).length;
  });
  observer.observe({ entryTypes: ['gc'] });
  const before = heapUsed();
  const started = performance.now();
  for (let i = 0; i < adds; i++) {
    const reading = readings[i % distinct] as Reading;
    buffer.add(reading.sensor, reading);
  }
  const elapsed = performance.now() - started;
  const after = process.memoryUsage().heapUsed;
  // GC entries are delivered asynchronously: let them arrive before counting.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return { bytes: (after - before) / adds, perSec: (adds * 1000) / elapsed, collections };
}

const doubles = await bytesPerAdd((i) => (i % 1000) / 10 + 0.05);
const integers = await bytesPerAdd((i) => i % 7);
const result: MemoryProbe = {
  keys,
  bytesPerOpenKey: bytesPerOpenKey(),
  windows,
  bytesPerOpenWindow: bytesPerOpenWindow(),
  adds,
  addsPerSec: doubles.perSec,
  bytesPerAddFloat: doubles.bytes,
  bytesPerAddInteger: integers.bytes,
  collectionsDuringAdds: doubles.collections + integers.collections,
};
replyToParent(result);
