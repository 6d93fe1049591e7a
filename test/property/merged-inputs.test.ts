// A job over several inputs (`mergeInputs`) on the embedded broker, through crashes: 2 to 4
// input streams with skew, disorder, late messages, idle stretches in event time and filtered
// messages, chunked at random; tumbling, hopping or session windows. An uninterrupted run
// writes what the merged order decides (the naive event-time model over the merged sequence
// of ../support/models/merged-order.ts), and runs crashed at random publishes and restarted
// from their results' merge records write it byte for byte. No input is left out as idle here
// (`idleAfter: 'never'`): leaving out is a wall-clock decision, tested on its own
// (test/component/merge/idle-inputs.test.ts). The crashed runs hold at most 1 to 5 messages per
// input ahead of the others (`maxBufferedPerInput`), so their reads wait and go on in orders the
// uninterrupted run, which reads at will, never takes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeResult } from '../../src/index.js';
import type { MemoryBroker } from '../../src/memory/index.js';
import { faultPointArb, runThroughCrashes } from '../support/arbitraries/crashes.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { targetBytes } from '../support/arbitraries/memory-scenario.js';
import {
  WINDOW_MS,
  brokerWithInputs,
  keyOf,
  mergedJob,
  mergedScenarioArb,
  type MergedScenario,
  type MergedWindow,
} from '../support/arbitraries/merged-inputs-scenario.js';
import { asReferenceResults } from '../support/jobs/event-time-job.js';
import { mergedReference } from '../support/models/merged-order.js';
import { referenceRun, type ReferenceWindow } from '../support/models/event-time-reference.js';
import { expectSameMessages } from '../support/results/same-bytes.js';
import { expectStrictlyIncreasing } from '../support/results/target-stream.js';
import { keepingLogger, type KeepingLogger } from '../support/doubles/keeping-logger.js';

// Each run is an uninterrupted job and up to nine crashed or restarted ones.
const PARAMETERS = propertyParameters(150);

/**
 * 1 to 8 crashes, each at one of a run's first 5 publishes (a job over skewed inputs publishes
 * tens of results, fewer than a job over one), at any of the four fault points.
 */
const crashArb = fc.array(
  fc.record({ atPublish: fc.integer({ min: 1, max: 5 }), point: faultPointArb }),
  {
    minLength: 1,
    maxLength: 8,
    size: 'max',
  },
);

/** How many messages an input of a crashed run may hold ahead of the others. */
const maxBufferedArb = fc.integer({ min: 1, max: 5 });

/** Whether a job's log says an input's read waited for the others. */
const readWaited = (logger: KeepingLogger): boolean =>
  logger.lines.some(([, , message]) => message.includes('its read waits'));

function referenceWindow(window: MergedWindow): ReferenceWindow {
  const { grace } = window;
  if (window.kind === 'tumbling') return { type: 'tumbling', size: WINDOW_MS, grace };
  if (window.kind === 'hopping') {
    return { type: 'hopping', size: 2 * WINDOW_MS, advance: WINDOW_MS, grace };
  }
  return { type: 'session', gap: 700, grace };
}

/** What the scenario's inputs hold, and what its uninterrupted run published. */
function countScenario(coverage: Coverage, scenario: MergedScenario, broker: MemoryBroker): void {
  const { inputs, skews, job } = scenario;
  const results = broker.messages('target').map((message) => decodeResult(message.bytes));
  const many = new Set(results.map((result) => result.lastOffset)).size >= 3;
  coverage.count('runs with >= 3 results', many);
  coverage.count(`${job.window.kind} with >= 3 results`, many);
  coverage.count('runs of 3 or 4 inputs', inputs.length >= 3);
  coverage.count(
    'runs with inputs skewed by a window or more',
    skews.some((skew) => skew >= WINDOW_MS),
  );
  coverage.count(
    'runs with an idle stretch of 3 windows in an input',
    inputs.some((input) => {
      const times = input.chunks.flat().map((message) => message.time);
      return times.some((time, i) => i > 0 && time - (times[i - 1] as number) >= 3 * WINDOW_MS);
    }),
  );
  coverage.count(
    'runs with late messages published',
    results.some((result) => result.lateCount + result.lateDropped > 0),
  );
  coverage.count(
    'runs with filtered messages published',
    results.some((result) => result.filtered > 0),
  );
}

/** Before each (re)start: the merge record the target's last result gives it. */
function countRestart(coverage: Coverage, broker: MemoryBroker): void {
  const last = broker.messages('target').at(-1);
  const record = last === undefined ? undefined : decodeResult(last.bytes).recovery?.merge;
  if (record === undefined) return;
  coverage.count('restarts from a merge record');
  coverage.count(
    'restarts reading an input again from above 0',
    record.inputs.some((input) => input.from > 0n),
  );
  coverage.count(
    'restarts reading inputs again from different offsets',
    new Set(record.inputs.map((input) => input.from)).size > 1,
  );
}

describe('a job over several inputs on the embedded broker', () => {
  it(
    'should publish what the merged order decides, byte for byte the same after any crashes and restarts',
    async () => {
      const coverage = new Coverage('several inputs through crashes');
      await fc.assert(
        fc.asyncProperty(
          mergedScenarioArb,
          crashArb,
          maxBufferedArb,
          async (scenario, crashes, maxBuffered) => {
            coverage.run();
            const { inputs, job: spec } = scenario;
            const expected = brokerWithInputs(inputs);
            await mergedJob(expected, inputs.length, spec).run({ untilCaughtUp: true });
            countScenario(coverage, scenario, expected);
            const merged = mergedReference(
              inputs.map((input) => input.chunks.flat()),
              spec.maxOutOfOrderness,
              (message) => keyOf(spec, message),
            );
            const reference = referenceRun(merged, {
              window: referenceWindow(spec.window),
              maxOutOfOrderness: 0, // the merge applied it, per input
              late: spec.late,
            });
            expect(asReferenceResults(targetBytes(expected))).toEqual(reference);

            const broker = brokerWithInputs(inputs);
            const logger = keepingLogger();
            await runThroughCrashes(
              broker,
              'target',
              crashes,
              () => {
                countRestart(coverage, broker);
                const options = { idleAfter: 'never', maxBufferedPerInput: maxBuffered } as const;
                return mergedJob(broker, inputs.length, spec, options, logger);
              },
              coverage,
            );
            coverage.count('runs where an input waited for the others', readWaited(logger));
            expectSameMessages(targetBytes(broker), targetBytes(expected));
            expectStrictlyIncreasing(
              broker.chunks('target').map((chunk) => chunk.writer?.publishingId ?? -1n),
            );
          },
        ),
        PARAMETERS,
      );
      // Expected occurrences per run, below what 100 runs measured (see Coverage.expectRates).
      coverage.expectRates({
        'runs with >= 3 results': 0.6,
        'runs where an input waited for the others': 0.8,
        'tumbling with >= 3 results': 0.25,
        'hopping with >= 3 results': 0.2,
        'session with >= 3 results': 0.08,
        'runs of 3 or 4 inputs': 0.5,
        'runs with inputs skewed by a window or more': 0.45,
        'runs with an idle stretch of 3 windows in an input': 0.9,
        'runs with late messages published': 0.4,
        'runs with filtered messages published': 0.8,
        'crashes fired': 1.1,
        'crashes after a stored result': 0.9,
        'before-publish fired': 0.2,
        'after-publish fired': 0.25,
        'after-confirm fired': 0.3,
        'lose-confirm fired': 0.25,
        'restarts from a merge record': 3,
        'restarts reading an input again from above 0': 3,
        'restarts reading inputs again from different offsets': 3,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
