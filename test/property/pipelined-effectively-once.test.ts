// Effectively-once with publishes pipelined over a connection that behaves like RabbitMQ's
// (test/support/doubles/pipelined-target.ts): delayed confirms landing in any order, lost confirms,
// connection losses and crashes with several publishes in flight. The target must end as an
// uninterrupted run writes it, and no run may end or re-read its resume point while one of
// its publishes is still in flight.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SimulatedCrash } from '../../src/memory/index.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { brokerWith, targetBytes, uninterrupted } from '../support/arbitraries/memory-scenario.js';
import { Link, type LinkFaultKind } from '../support/doubles/pipelined-target.js';
import { buildJob, jobArb, sourceArb } from '../support/arbitraries/scenario.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import { expectEveryMessageCountedOnce, stepsOf } from '../support/results/target-stream.js';
import { expectSameMessages } from '../support/results/same-bytes.js';

const linkFaultsArb = fc.array(
  fc.record({
    atPublish: fc.integer({ min: 1, max: 60 }),
    kind: fc.constantFrom<LinkFaultKind>('lose-confirm', 'connection-loss', 'crash'),
  }),
  { minLength: 1, maxLength: 8, size: 'max' },
);

describe('effectively-once with pipelined publishes', () => {
  it(
    'should write a byte-identical target through delayed, reordered and lost confirms and lost connections',
    async () => {
      const coverage = new Coverage('pipelined publishes');
      await fc.assert(
        fc.asyncProperty(
          sourceArb({ garbage: true, minLength: 50, maxLength: 300 }),
          jobArb({ deadLetter: true }),
          fc.integer({ min: 2, max: 8 }),
          linkFaultsArb,
          fc.integer(),
          async (source, spec, maxInFlight, faults, seed) => {
            coverage.run();
            const expected = await uninterrupted(source, spec);
            const broker = brokerWith(source);
            const link = new Link(seededRandom(seed), faults);
            let finished = false;
            while (!finished) {
              const target = link.target(broker.target('target', { producer: 'job-1' }));
              const job = buildJob(spec, broker.source('source'), target, { maxInFlight });
              try {
                await job.run({ untilCaughtUp: true });
                finished = true;
              } catch (error) {
                if (!(error instanceof SimulatedCrash)) throw error;
              }
              // A run ends only once every publish it made is confirmed or failed.
              expect(target.inFlight).toBe(0);
              coverage.count('job runs');
            }

            expectSameMessages(targetBytes(broker), targetBytes(expected));
            expectEveryMessageCountedOnce(stepsOf(targetBytes(broker)));
            const { figures } = link;
            expect(figures.maxInFlight).toBeLessThanOrEqual(maxInFlight);
            expect(figures.queriesWithPublishesInFlight).toBe(0);

            coverage.count('runs with >= 3 results', stepsOf(targetBytes(expected)).length >= 3);
            coverage.count(
              'runs that filled the in-flight bound',
              figures.maxInFlight === maxInFlight,
            );
            coverage.add('confirms out of order', figures.confirmsOutOfOrder);
            coverage.add('confirm timeouts', figures.timeouts);
            coverage.add('confirm timeouts before the store', figures.timeoutsBeforeStore);
            coverage.add('connection losses', figures.connectionLosses);
            coverage.add('crashes', figures.crashes);
            coverage.add('failures with >= 2 in flight', figures.failuresWithTwoInFlight);
            coverage.add(
              'losses with in-flight writes partly stored',
              figures.lossesWithPartlyStoredWrites,
            );
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 3 results': 0.97,
        'runs that filled the in-flight bound': 0.95,
        'confirms out of order': 9,
        'confirm timeouts': 0.55,
        'confirm timeouts before the store': 0.45,
        'connection losses': 0.6,
        crashes: 0.65,
        'failures with >= 2 in flight': 1.7,
        'losses with in-flight writes partly stored': 0.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
