import { aggregate } from '../src/dsl/pipeline.js';
import type { Target } from '../src/ports/ports.js';
import { MemoryBroker } from '../src/memory/broker.js';
import { forwarding } from '../test/support/doubles/forwarding-target.js';
import {
  CHUNK_MESSAGES,
  encodeReading,
  readings,
  type CorpusShape,
  type Reading,
} from './corpus.js';
import { crashBeforeSecondResult } from './crash.js';
import { median } from './measure.js';
import { throughput, type CaseResult } from './report.js';

export const OPEN_WINDOW_SIZES = [1_000, 10_000, 100_000] as const;

const MINUTE = 60_000;
const START = Date.UTC(2025, 0, 1);
const KEYS = 100;

/**
 * Case 5: time from a restart to the first new result, against the size of the window that
 * was open at the crash. The source holds a closed window A (one chunk), the open window B
 * (`size` messages) and one message of window C. Run 1 publishes A, then crashes on B's
 * publish (fault 'before-publish', so B is never stored). Run 2 — the measured restart —
 * asks the broker for the last publishing id (A's), re-reads B from the embedded broker and
 * publishes B when C arrives: everything a restart pays for an open window of that size.
 */
export async function recoveryCases(
  repeats: number,
  sizes: readonly number[] = OPEN_WINDOW_SIZES,
): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const size of sizes) {
    const samples: number[] = [];
    for (let i = 0; i < repeats + 1; i++) {
      const ms = await timeToFirstResult(size);
      if (i > 0) samples.push(ms); // the first one warms the JIT
    }
    results.push({
      name: `restart/${size}-message-open-window`,
      kind: 'recovery',
      ...throughput(size, samples),
      ratios: {},
      values: {
        msToFirstResult: median(samples),
        msToFirstResultMin: Math.min(...samples),
        msToFirstResultMax: Math.max(...samples),
      },
    });
  }
  return results;
}

async function timeToFirstResult(size: number): Promise<number> {
  const broker = new MemoryBroker({ now: () => START });
  broker.createStream('source');
  broker.createStream('results');
  fill(broker, size);

  const job = (target: Target) =>
    aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .key((reading) => reading.sensor)
      .reduce((total, reading) => total + reading.value, 0)
      .to(target);
  const crashed = await crashBeforeSecondResult(broker, 'results', job);
  if (!crashed || broker.messages('results').length !== 1) {
    throw new Error('recovery bench: run 1 did not crash after publishing window A');
  }

  let firstResultAt = Number.NaN;
  const target = broker.target('results', { producer: 'bench' });
  const restarted: Target = {
    ...forwarding(target),
    publish: async (publishingId, messages) => {
      await target.publish(publishingId, messages);
      if (Number.isNaN(firstResultAt)) firstResultAt = performance.now();
    },
  };
  const started = performance.now();
  await job(restarted).run({ untilCaughtUp: true });
  if (broker.messages('results').length !== 2) {
    throw new Error('recovery bench: the restart did not publish window B');
  }
  return firstResultAt - started;
}

/** Window A: one chunk; window B: `size` messages in 500-message chunks; window C: one message. */
function fill(broker: MemoryBroker, size: number): void {
  const shape: CorpusShape = {
    messages: CHUNK_MESSAGES + size + 1,
    keys: KEYS,
    windowMessages: size,
  };
  const all = [...readings(shape)];
  const at = (window: number, i: number, count: number): number =>
    START + window * MINUTE + Math.floor((i * MINUTE) / count);
  const windowA = all.slice(0, CHUNK_MESSAGES);
  broker.append(
    'source',
    windowA.map((reading, i) => encodeReading(reading, at(0, i, CHUNK_MESSAGES))),
  );
  const windowB = all.slice(CHUNK_MESSAGES, CHUNK_MESSAGES + size);
  for (let first = 0; first < size; first += CHUNK_MESSAGES) {
    const chunk = windowB.slice(first, first + CHUNK_MESSAGES);
    broker.append(
      'source',
      chunk.map((reading, i) => encodeReading(reading, at(1, first + i, size))),
    );
  }
  broker.append('source', [encodeReading(all[all.length - 1] as Reading, at(2, 0, 1))]);
}
