import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import { crashArb, runThroughCrashes } from '../support/arbitraries/crashes.js';
import { brokerWith, targetBytes, uninterrupted } from '../support/arbitraries/memory-scenario.js';
import { buildJob, jobArb, sourceArb, type JobSpec } from '../support/arbitraries/scenario.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import {
  expectEveryMessageCountedOnce,
  expectStrictlyIncreasing,
  stepsOf,
} from '../support/results/target-stream.js';
import { expectSameMessages } from '../support/results/same-bytes.js';

// Hundreds of messages: tens to hundreds of steps per run, so crashes land deep in a job.
const source = (garbage: boolean) => sourceArb({ garbage, minLength: 50, maxLength: 300 });

function job(broker: MemoryBroker, spec: JobSpec) {
  return buildJob(spec, broker.source('source'), broker.target('target', { producer: 'job-1' }));
}

/** Counts what a run's target holds: results, window kind and packing, late and dead letters. */
function countResults(coverage: Coverage, spec: JobSpec, broker: MemoryBroker): void {
  const steps = stepsOf(targetBytes(broker));
  const many = steps.length >= 3;
  coverage.add('results', steps.length);
  coverage.count('runs with >= 3 results', many);
  coverage.count(`${spec.window.kind} with >= 3 results`, many);
  coverage.count(`${spec.pack} packing with >= 3 results`, many);
  coverage.count(
    'runs with a step in several batch parts',
    steps.some((parts) => parts.length > 1),
  );
  const heads = steps.map((parts) => parts[0]);
  coverage.count(
    'runs with late values',
    heads.some((h) => (h?.lateCount ?? 0) > 0),
  );
  coverage.count(
    'runs with late drops',
    heads.some((h) => (h?.lateDropped ?? 0) > 0),
  );
  coverage.count(
    'runs with dead letters',
    heads.some((h) => (h?.deadLetterCount ?? 0) > 0),
  );
}

// Expected occurrences per run, a little below what 200 runs measure (see Coverage.expectRates).
const WINDOW_AND_PACKING_RATES = {
  'runs with >= 3 results': 0.97,
  'tumbling with >= 3 results': 0.14,
  'count with >= 3 results': 0.14,
  'session with >= 3 results': 0.14,
  'compact-count with >= 3 results': 0.14,
  'compact-every with >= 3 results': 0.14,
  'compact-gap with >= 3 results': 0.14,
  // Four packings: 'sections', 'batch', and 'single' in msgpack and in JSON.
  'sections packing with >= 3 results': 0.2,
  'batch packing with >= 3 results': 0.2,
  'single packing with >= 3 results': 0.45,
  'runs with a step in several batch parts': 0.17,
  'runs with late values': 0.16,
  'runs with late drops': 0.21,
};

describe('effectively-once on the embedded broker', () => {
  it(
    'should write a byte-identical target after any number of crashes and restarts',
    async () => {
      const coverage = new Coverage('crashes and restarts');
      await fc.assert(
        fc.asyncProperty(
          source(true),
          jobArb({ deadLetter: true }),
          crashArb,
          async (source, spec, crashes) => {
            coverage.run();
            const expected = await uninterrupted(source, spec);
            countResults(coverage, spec, expected);

            const broker = brokerWith(source);
            await runThroughCrashes(broker, 'target', crashes, () => job(broker, spec), coverage);

            expectSameMessages(targetBytes(broker), targetBytes(expected));
            expectStrictlyIncreasing(
              broker.chunks('target').map((c) => c.writer?.publishingId ?? -1n),
            );
            expectEveryMessageCountedOnce(stepsOf(targetBytes(broker)));
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates({
        ...WINDOW_AND_PACKING_RATES,
        'crashes fired': 1.7,
        'crashes after a stored result': 1.6,
        'before-publish fired': 0.4,
        'after-publish fired': 0.4,
        'after-confirm fired': 0.4,
        'lose-confirm fired': 0.4,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'should count every source message in exactly one result for every window kind',
    async () => {
      const coverage = new Coverage('every message counted once');
      await fc.assert(
        fc.asyncProperty(source(true), jobArb({ deadLetter: true }), async (source, spec) => {
          coverage.run();
          const broker = await uninterrupted(source, spec);
          countResults(coverage, spec, broker);
          const steps = stepsOf(targetBytes(broker));
          expectEveryMessageCountedOnce(steps);
          // Every message up to the last published step is accounted for; the rest is the open step.
          const counted = steps.reduce((n, parts) => n + (parts[0]?.messages ?? 0), 0);
          const total = source.chunks.reduce((n, c) => n + c.entries.length, 0);
          expect(counted).toBeLessThanOrEqual(total);
        }),
        propertyParameters(),
      );
      coverage.expectRates({ ...WINDOW_AND_PACKING_RATES, 'runs with dead letters': 0.95 });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'should produce the same bytes when a finished job is run again from scratch',
    async () => {
      const coverage = new Coverage('replay from scratch');
      await fc.assert(
        fc.asyncProperty(source(false), jobArb({ deadLetter: false }), async (source, spec) => {
          coverage.run();
          const first = await uninterrupted(source, spec);
          countResults(coverage, spec, first);
          const again = brokerWith(source);
          // A second target, as a replay of the whole source by a new producer would write it.
          await job(again, spec).run({ untilCaughtUp: true });
          await job(again, spec).run({ untilCaughtUp: true }); // a restart after the end changes nothing
          expectSameMessages(targetBytes(again), targetBytes(first));
        }),
        propertyParameters(),
      );
      coverage.expectRates(WINDOW_AND_PACKING_RATES);
    },
    PROPERTY_TIMEOUT_MS,
  );
});
