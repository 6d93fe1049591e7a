/**
 * Retained heap of open event-time windows, run by memory.ts in a child with --expose-gc.
 * Method (as bench/memory-probe.ts, with typed arrays' backing stores counted): the first
 * burst's chunks are built first; then a full gc and heapUsed + arrayBuffers, a fresh processor
 * takes the burst (every key then has its windows open, none of the burst's tumbling windows or
 * sessions has closed), its ready results are dropped, a full gc and the same reading again. The difference is the state: windows, keys,
 * accumulators, the operator's indexes (and, under 1,000 keys, the processor itself).
 */
import type { SourceChunk } from '../../src/ports/ports.js';
import { replyToParent } from '../child.js';
import { retainedAfterFullGc } from '../heap.js';
import { buildOpenKeyChunks } from './corpus.js';
import { EVENT_TIME_KINDS, processorOf, type JobKind } from './jobs.js';
import { throughputShape } from './throughput.js';

const heapUsed = retainedAfterFullGc('event-time memory probe');

/** Retained bytes of each kind's state with `keys` keys open, by kind. */
export type RetainedBytes = Record<JobKind, number>;

function retained(messages: number, keys: number): RetainedBytes {
  const shape = throughputShape(messages, keys);
  const chunks = buildOpenKeyChunks({ ...shape, messages: shape.windowMessages });
  const kinds: readonly JobKind[] = ['step-tumbling', ...EVENT_TIME_KINDS];
  // A first pass compiles the code and fills V8's feedback, which live on the heap too.
  for (const kind of kinds) stateBytes(kind, chunks, keys);
  const bytes = {} as RetainedBytes;
  for (const kind of kinds) bytes[kind] = stateBytes(kind, chunks, keys);
  return bytes;
}

/**
 * In a frame of its own, so that no processor of an earlier call is still on the stack.
 * Under 1,000 keys, as many processors as make 1,000 keys, each fed the burst's first chunk
 * (its keys' windows are then open, as after the whole burst): one key's state alone is under
 * the heap's noise. Bytes per processor.
 */
function stateBytes(kind: JobKind, chunks: readonly SourceChunk[], keys: number): number {
  const copies = Math.ceil(1_000 / keys);
  const fed = copies > 1 ? chunks.slice(0, 1) : chunks;
  const before = heapUsed();
  const processors = Array.from({ length: copies }, () => processorOf(kind));
  for (const processor of processors) {
    for (const chunk of fed) {
      processor.process(chunk);
      processor.ready.length = 0;
    }
  }
  const after = heapUsed();
  // Used after the reading, so that the processors (the state) are alive at it.
  if (processors.some((processor) => processor.ready.length > 0)) {
    throw new Error('event-time memory probe: results left');
  }
  return (after - before) / copies;
}

const messages = Number(process.argv[2]);
const keyCounts = (process.argv[3] ?? '').split(',').map(Number);
replyToParent(keyCounts.map((keys) => ({ keys, bytes: retained(messages, keys) })));
