// Steps larger than one write, through crashes on the embedded broker: random numbers of keys
// make steps around and far above a random write limit, in every packing, for step windows and
// for event-time windows (one message closing every key's window). Jobs crash at random
// writes, between the writes of one step included; the target must end byte for byte as an
// uninterrupted run writes it, and `readResults` must give every step once and whole.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  type DecodedResult,
  jsonMessage,
  readResults,
  readStepId,
  tumbling,
  type PackMode,
  type SingleFormat,
} from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { crashArb, runThroughWriteCrashes } from '../support/arbitraries/crashes.js';
import { T0, type Reading } from '../support/jobs/memory-job.js';
import {
  expectEveryMessageCountedOnce,
  expectStepsTile,
  stepsOf,
} from '../support/results/target-stream.js';

interface Case {
  readonly readings: readonly Reading[];
  readonly kind: 'step' | 'event-time';
  readonly pack: PackMode;
  readonly format: SingleFormat;
  readonly frameMax: number;
}

/**
 * 30 to 160 readings of 1 to 400 keys (names padded to vary an output's size), a few seconds
 * apart, so that a minute holds from one to hundreds of keys.
 */
const caseArb: fc.Arbitrary<Case> = fc
  .record({
    keys: fc.integer({ min: 1, max: 400 }),
    pad: fc.integer({ min: 0, max: 40 }),
    gaps: fc.array(fc.integer({ min: 0, max: 4_000 }), { minLength: 30, maxLength: 160 }),
    seed: fc.integer({ min: 0, max: 1_000_000 }),
    kind: fc.constantFrom<Case['kind']>('step', 'event-time'),
    pack: fc.constantFrom<PackMode>('single', 'sections', 'batch'),
    format: fc.constantFrom<SingleFormat>('msgpack', 'json'),
    frameMax: fc.constantFrom(1_024, 2_048, 4_096, 16_384),
  })
  .map(({ keys, pad, gaps, seed, kind, pack, format, frameMax }) => {
    let t = T0;
    const readings = gaps.map((gap, i) => {
      t += gap;
      const key = (seed + i * 7_919) % keys;
      return { sensor: `s${String(key).padStart(pad, '0')}`, value: i, t };
    });
    return { readings, kind, pack, format, frameMax };
  });

function brokerFor(c: Case): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0, frameMax: c.frameMax });
  broker.createStream('source');
  broker.createStream('target');
  for (let i = 0; i < c.readings.length; i += 5) {
    const chunk = c.readings.slice(i, i + 5).map((r) => jsonMessage(r, { creationTime: r.t }));
    broker.append('source', chunk, { timestamp: T0 });
  }
  return broker;
}

function jobFor(c: Case, broker: MemoryBroker) {
  const source = aggregate<Reading>(broker.source('source'));
  const windowed =
    c.kind === 'step' ? source.tumbling('1m') : source.window(tumbling('1m', { grace: 0 }));
  return windowed
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'job' }), {
      pack: c.pack,
      ...(c.pack === 'single' ? { format: c.format } : {}),
      retryDelayMs: 0,
    });
}

const bytesOf = (broker: MemoryBroker) => broker.messages('target').map((m) => m.bytes);

/** How many writes each step took, from the ids the embedded log keeps per chunk. */
function writesPerStep(broker: MemoryBroker): number[] {
  const writes = new Map<bigint, number>();
  for (const chunk of broker.chunks('target')) {
    const id = chunk.writer?.publishingId;
    if (id === undefined) continue;
    const step = readStepId(id);
    if (step.kind !== 'write') throw new Error(`an id of the earlier scheme: ${id}`);
    writes.set(step.offset, (writes.get(step.offset) ?? 0) + 1);
  }
  return [...writes.values()];
}

describe('steps larger than one write on the embedded broker', () => {
  it(
    'end byte-identical to an uninterrupted run through crashes between writes, each step read once and whole',
    async () => {
      const coverage = new Coverage('multi-write steps');
      await fc.assert(
        fc.asyncProperty(caseArb, crashArb, async (c, crashes) => {
          coverage.run();
          const reference = brokerFor(c);
          await jobFor(c, reference).run({ untilCaughtUp: true });
          const expected = bytesOf(reference);
          const broker = brokerFor(c);
          const target = broker.target('target', { producer: 'job' });
          const writes = reference.chunks('target').length;
          const job = () => jobFor(c, broker);
          await runThroughWriteCrashes(broker, target, crashes, writes, job, coverage);

          const written = bytesOf(broker);
          expect(written).toEqual(expected);
          const steps = stepsOf(written);
          if (c.kind === 'step') expectEveryMessageCountedOnce(steps);
          else expectStepsTile(steps.map((parts) => parts[0] as DecodedResult));
          const read = [];
          for await (const item of readResults(broker.source('target'), { untilCaughtUp: true })) {
            read.push(item.result);
          }
          expect(read).toHaveLength(steps.length);
          for (const [i, result] of read.entries()) {
            expect(result.part).toBeUndefined();
            expect(result.outputs).toHaveLength(result.outputCount);
            expect(result.lastOffset).toBe(steps[i]?.[0]?.lastOffset);
          }

          const perStep = writesPerStep(broker);
          coverage.count(
            'runs with a step of >= 2 writes',
            perStep.some((n) => n >= 2),
          );
          coverage.count(
            'runs with a step of >= 10 writes',
            perStep.some((n) => n >= 10),
          );
          coverage.count(
            `${c.kind} runs with a step of >= 2 writes`,
            perStep.some((n) => n >= 2),
          );
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        // Measured over 200 runs: 0.50, 0.14, 0.25, 0.26, 1.46 and 0.54 a run.
        'runs with a step of >= 2 writes': 0.4,
        'runs with a step of >= 10 writes': 0.08,
        'step runs with a step of >= 2 writes': 0.17,
        'event-time runs with a step of >= 2 writes': 0.17,
        'crashes fired': 1,
        'crashes leaving a step not whole': 0.35,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
