// The run loop processes a chunk of more than 1,000 messages in slices, publishing each
// slice's results before the next (src/engine/run-loop.ts). What it publishes must not depend
// on it: a random job over one chunk of 1,100 to 1,600 messages, crashed at some of its first
// publishes (mid-chunk: a slice's results leave before the chunk is processed) and restarted
// (from a resume point inside the chunk, re-reading open windows there), writes byte for byte
// what it writes uninterrupted over the same messages in small chunks (none sliced).
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import type { PackMode } from '../../src/index.js';
import type { DecodedResult } from '../../src/result-format/result-format.js';
import { faultPointArb, runThroughCrashes } from '../support/arbitraries/crashes.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { eventTimeCaseArbitrary } from '../support/arbitraries/event-time-arbitrary.js';
import { brokerWith, targetBytes } from '../support/arbitraries/memory-scenario.js';
import {
  buildJob,
  jobArb,
  sourceArb,
  type JobSpec,
  type SourceSpec,
} from '../support/arbitraries/scenario.js';
import { caseJob, caseMessages, sumOfValues } from '../support/jobs/event-time-job.js';
import { expectSameMessages } from '../support/results/same-bytes.js';
import { stepsOf } from '../support/results/target-stream.js';

/** The loop's slice (SLICE_MESSAGES in src/engine/run-loop.ts). */
const SLICE = 1_000;
const MIN_MESSAGES = SLICE + 100;
const MAX_MESSAGES = SLICE + 600;
/** A run runs its job several times over more than a thousand messages: fewer runs. */
const RUNS = 30;

/** 0 to 3 crashes, each at one of a run's first 6 publishes: the first slice's results. */
const crashesArb = fc.array(
  fc.record({ atPublish: fc.integer({ min: 1, max: 6 }), point: faultPointArb }),
  { maxLength: 3 },
);

/** Counts the results of a run before the last slice: those published between slices. */
function countSlicedResults(coverage: Coverage, written: readonly Uint8Array[], messages: number) {
  const heads = stepsOf(written).map((parts) => parts[0] as DecodedResult);
  const lastSlice = BigInt(Math.floor((messages - 1) / SLICE) * SLICE);
  coverage.count(
    'runs with >= 3 results before the last slice',
    heads.filter((head) => head.lastOffset < lastSlice).length >= 3,
  );
  return heads;
}

describe('a chunk processed in slices', () => {
  it(
    'publishes, through crashes, the bytes the same messages give in small chunks: step windows',
    async () => {
      const coverage = new Coverage('step windows over one large chunk');
      await fc.assert(
        fc.asyncProperty(
          sourceArb({ garbage: true, minLength: MIN_MESSAGES, maxLength: MAX_MESSAGES }),
          jobArb({ deadLetter: true }),
          fc.boolean(),
          crashesArb,
          async (generated, spec, flush, crashes) => {
            coverage.run();
            // One broker timestamp for all: a message without an event time of its own takes
            // its chunk's, and only the chunking may differ here.
            const timestamp = generated.chunks[0]?.timestamp ?? 0;
            const small = { chunks: generated.chunks.map((c) => ({ ...c, timestamp })) };
            const entries = generated.chunks.flatMap((c) => c.entries);
            const whole = brokerWith({ chunks: [{ timestamp, entries }] });
            const job = (broker: MemoryBroker) => stepJob(broker, spec, flush);
            await runThroughCrashes(whole, 'target', crashes, () => job(whole), coverage);
            const expected = await uninterrupted(small, job);
            expectSameMessages(targetBytes(whole), expected, 'one large chunk');

            const heads = countSlicedResults(coverage, expected, entries.length);
            coverage.count(
              'runs with a flushed result',
              heads.some((head) => head.flushed),
            );
            coverage.count(`${spec.pack} packing`);
          },
        ),
        propertyParameters(RUNS),
      );
      coverage.expectRates({
        'runs with >= 3 results before the last slice': 0.8,
        'runs with a flushed result': 0.25,
        'crashes fired': 0.8,
        'crashes after a stored result': 0.5,
        'sections packing': 0.12,
        'batch packing': 0.12,
        'single packing': 0.3,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'publishes, through crashes, the bytes the same messages give in small chunks: event-time windows',
    async () => {
      const coverage = new Coverage('event-time windows over one large chunk');
      await fc.assert(
        fc.asyncProperty(
          eventTimeCaseArbitrary({ minMessages: MIN_MESSAGES, maxMessages: MAX_MESSAGES }),
          fc.constantFrom<PackMode>('sections', 'batch', 'single'),
          crashesArb,
          async (c, pack, crashes) => {
            coverage.run();
            const messages = caseMessages(c.messages);
            const job = (broker: MemoryBroker) =>
              caseJob(
                c.config,
                broker.source('source'),
                broker.target('target', { producer: 'job-1' }),
                sumOfValues,
                { pack },
              );
            const whole = eventTimeBroker(messages, messages.length);
            await runThroughCrashes(whole, 'target', crashes, () => job(whole), coverage);
            const small = eventTimeBroker(messages, 7);
            await job(small).run({ untilCaughtUp: true });
            const expected = targetBytes(small);
            expectSameMessages(targetBytes(whole), expected, 'one large chunk');
            countSlicedResults(coverage, expected, messages.length);
          },
        ),
        propertyParameters(RUNS),
      );
      coverage.expectRates({
        'runs with >= 3 results before the last slice': 0.8,
        'crashes fired': 0.8,
        'crashes after a stored result': 0.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});

function stepJob(broker: MemoryBroker, spec: JobSpec, flush: boolean) {
  const target = broker.target('target', { producer: 'job-1' });
  return buildJob(
    spec,
    broker.source('source'),
    target,
    flush ? { flush: { caughtUp: true } } : {},
  );
}

/** The target an uninterrupted run of `job` writes over `source`. */
async function uninterrupted(
  source: SourceSpec,
  job: (broker: MemoryBroker) => ReturnType<typeof stepJob>,
): Promise<Uint8Array[]> {
  const broker = brokerWith(source);
  await job(broker).run({ untilCaughtUp: true });
  return targetBytes(broker);
}

/** A broker holding `messages` on 'source' in chunks of `chunkSize`, and an empty 'target'. */
function eventTimeBroker(messages: readonly Uint8Array[], chunkSize: number): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  for (let i = 0; i < messages.length; i += chunkSize) {
    broker.append('source', messages.slice(i, i + chunkSize));
  }
  return broker;
}
