// A measurement, not a test: a `count(2, { perKey: true })` job with 1,000,000 open keys on the
// embedded broker (RabbitMQ's default frame_max), whose recovery state (`sw-open-counts`, about
// 26 MB of JSON) no longer fits a write: the step carries it once, in slices across its
// writes. Times and memory to publish that step and to restart from it.
//
//   npx tsx --expose-gc bench/event-time/open-counts-million.ts [keys]
//
// Phases: (1) the job reads the keys (each seen once: its window stays open) and a key seen
// twice, whose window closes: ONE step, published in several writes; (2) that step's encoding
// alone (`encodeStep` on the step result the job published); (3) a restart after one more
// message (a key's second, which closes its window): reading the last result and its slices,
// then re-reading the source from the resume offset (offset 0, all 1,000,001 messages) to
// rebuild the open windows, then publishing the next step. Heap: retained after a GC at the
// end of each phase (the job still referenced), and the highest RSS sampled during it.
import { aggregate } from '../../src/dsl/pipeline.js';
import { MemoryBroker } from '../../src/memory/broker.js';
import { count } from '../../src/windows/count.js';
import { jsonMessage } from '../../src/codecs/source-message.js';
import { readStepId } from '../../src/result-format/publishing-id.js';
import { encodeStep } from '../../src/result-format/step-writes.js';
import { readLastResult, withOpenCounts } from '../../src/engine/resume/last-result.js';
import type { StepResult } from '../../src/result-format/step-result.js';

interface Event {
  readonly k: string;
  readonly t: number;
}

const KEYS = Number(process.argv[2] ?? 1_000_000);
const gc = (globalThis as { gc?: () => void }).gc;
const MB = 1024 * 1024;

/** Runs `phase`, sampling RSS every 20 ms: its time, the highest RSS, the heap after a GC. */
async function measure<T>(
  name: string,
  phase: () => Promise<T>,
): Promise<{ value: T; figures: Record<string, number | string> }> {
  gc?.();
  const before = process.memoryUsage();
  let peakRss = before.rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 20);
  const start = performance.now();
  const value = await phase();
  const ms = performance.now() - start;
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  gc?.();
  const after = process.memoryUsage();
  return {
    value,
    figures: {
      phase: name,
      ms: Math.round(ms),
      peakRssMB: Math.round(peakRss / MB),
      heapBeforeMB: Math.round(before.heapUsed / MB),
      heapAfterGcMB: gc === undefined ? 'run with --expose-gc' : Math.round(after.heapUsed / MB),
    },
  };
}

function job(broker: MemoryBroker) {
  return aggregate<Event>(broker.source('source'))
    .eventTime((e) => e.t)
    .key((e) => e.k)
    .window(count(2, { perKey: true }))
    .reduce((sum) => sum + 1, 0)
    .to(broker.target('target', { producer: 'counts' }));
}

async function main(): Promise<void> {
  const broker = new MemoryBroker();
  broker.createStream('source');
  broker.createStream('target');
  let batch: Uint8Array[] = [];
  const flush = () => {
    if (batch.length > 0) broker.append('source', batch);
    batch = [];
  };
  for (let i = 0; i < KEYS; i++) {
    batch.push(jsonMessage({ k: `sensor-${i}`, t: i }));
    if (batch.length === 500) flush();
  }
  batch.push(jsonMessage({ k: 'closing', t: KEYS }), jsonMessage({ k: 'closing', t: KEYS + 1 }));
  flush();

  const figures: Record<string, number | string>[] = [];
  const first = await measure('first run: read every message, publish the step', async () => {
    await job(broker).run({ untilCaughtUp: true });
  });
  figures.push(first.figures);

  const chunks = broker.chunks('target');
  const ids = chunks.map((chunk) => readStepId(chunk.writer?.publishingId ?? 0n));
  const bytes = broker.messages('target').reduce((sum, m) => sum + m.bytes.length, 0);
  const target = broker.target('target', { producer: 'counts' });
  const lastId = await target.lastPublishingId();

  // Phase 2: the step's encoding alone, of the step rebuilt from what was read back.
  const read = await readLastResult(target, lastId, {});
  if (read.kind !== 'read') throw new Error('the step is not on the target');
  const header = await withOpenCounts(target, lastId, read.header, {});
  const openCounts = header.recovery?.openCounts ?? [];
  const stepResult: StepResult<unknown> = {
    firstOffset: header.firstOffset,
    lastOffset: header.lastOffset,
    messages: header.messages,
    window:
      header.windowStart === undefined || header.windowEnd === undefined
        ? null
        : { start: header.windowStart, end: header.windowEnd },
    outputs: [{ key: 'closing', value: 2, count: 2, start: KEYS, end: KEYS + 2 }],
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
    ...(header.recovery === undefined ? {} : { recovery: header.recovery }),
  };
  const metadata = { source: 'source', producer: 'counts', window: header.window };
  const encoding = await measure('encodeStep of that step alone', () =>
    Promise.resolve(
      encodeStep(stepResult, metadata, 'single', 'msgpack', target.maxWriteBytes, 0n),
    ),
  );
  figures.push(encoding.figures);

  const reading = await measure('restart: read the last result and its slices', async () => {
    const again = await readLastResult(target, lastId, {});
    if (again.kind !== 'read') throw new Error('the step is not on the target');
    return withOpenCounts(target, lastId, again.header, {});
  });
  figures.push(reading.figures);

  broker.append('source', [jsonMessage({ k: 'sensor-7', t: KEYS + 2 })]);
  const restart = await measure(
    'restart: whole run (read the result and slices, re-read every message, publish the next step)',
    async () => {
      await job(broker).run({ untilCaughtUp: true });
    },
  );
  figures.push(restart.figures);
  const after = broker.messages('target').length;

  console.log(
    JSON.stringify(
      {
        keys: KEYS,
        maxWriteBytes: target.maxWriteBytes,
        openCountsJsonBytes: Buffer.byteLength(
          JSON.stringify(
            openCounts.map(([k, o, s]) => (s === undefined ? [k, String(o)] : [k, String(o), s])),
          ),
        ),
        openWindowsRestored: reading.value.recovery?.openCounts?.length,
        firstStep: {
          writes: chunks.length,
          bytes,
          ids: ids.map((id) => (id.kind === 'write' ? (id.last ? 'last' : id.write) : id.kind)),
          slices: header.openCountSlices?.count ?? read.header.openCountSlices?.count,
        },
        encodeStepWrites: encoding.value.length,
        messagesAfterRestart: after,
        phases: figures,
      },
      null,
      2,
    ),
  );
}

await main();
