// Two jobs chained by fromResults on the embedded broker: random window kinds in each stage,
// every packing for stage 1, keys, and crashes in both stages (stage 2 also runs while stage 1
// is only part-way). The final target must not depend on any of it.
import fc from 'fast-check';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  fromResults,
  type LatePolicy,
  type OutputValue,
  type Runner,
  type Source,
  type Target,
} from '../../src/index.js';
import { MemoryBroker, SimulatedCrash } from '../../src/memory/index.js';
import { faultPointArb, type Crash } from '../support/arbitraries/crashes.js';
import { brokerWith } from '../support/arbitraries/memory-scenario.js';
import {
  buildJob,
  jobArb,
  sourceArb,
  windowArb,
  windowedJob,
  type JobSpec,
  type SourceSpec,
  type WindowChoice,
} from '../support/arbitraries/scenario.js';
import {
  expectEveryMessageCountedOnce,
  expectStrictlyIncreasing,
  stepsOf,
} from '../support/results/target-stream.js';

/**
 * Expected occurrences per run, a little below what 200 runs measure (see
 * Coverage.expectRates): several stage-2 steps ~37% of runs, a stage-1 message of several
 * outputs read by stage 2 ~30%, a crash fired in stage 1 ~45%, in stage 2 ~14%.
 */
const RATES = {
  'runs with several stage-2 steps': 0.3,
  'runs where stage 2 read a message of several outputs': 0.2,
  'runs with a crash in stage 1': 0.38,
  'runs with a crash in stage 2': 0.1,
};

interface StageTwoSpec {
  readonly window: WindowChoice;
  readonly keyed: boolean;
  readonly late: Extract<LatePolicy, 'include' | 'side'>;
}

const stageTwoArb: fc.Arbitrary<StageTwoSpec> = fc.record({
  window: windowArb,
  keyed: fc.boolean(),
  // Not 'drop': a dropped value's count is not in the result, and the test adds counts up.
  late: fc.constantFrom<'include' | 'side'>('include', 'side'),
});

/** A crash of one stage: stage 1's faults are on 'results', stage 2's on 'target'. */
interface StageCrash extends Crash {
  readonly stage: 1 | 2;
}

// Not the shared crashArb: a crash here picks its stage, and its publish among the first 4
// (stage 2 publishes few results).
const stageCrashArb: fc.Arbitrary<StageCrash[]> = fc.array(
  fc.record({
    // Stage 2 publishes less, so more of its crashes find nothing to crash on.
    stage: fc.oneof(
      { weight: 1, arbitrary: fc.constant<1 | 2>(1) },
      { weight: 2, arbitrary: fc.constant<1 | 2>(2) },
    ),
    atPublish: fc.integer({ min: 1, max: 4 }),
    point: faultPointArb,
  }),
  { minLength: 0, maxLength: 8 },
);

type StageTwoValue = OutputValue;

/** Stage 2 adds up how many source messages each stage-1 output folded (`count`). */
function stageTwo(
  spec: StageTwoSpec,
  source: Source,
  target: Target,
): Runner<StageTwoValue, unknown, unknown> {
  const pipeline = aggregate(fromResults(source, { late: 'skip', deadLetters: 'skip' }));
  return windowedJob(
    pipeline,
    spec,
    target,
    { retryDelayMs: 0 },
    {
      key: (v) => String(v.key),
      merge: (a, b) => ({ ...b, count: a.count + b.count }),
      aggregate: (windowed) => windowed.reduce((sum: number, v) => sum + v.count, 0),
    },
  );
}

/** The scenario's broker, with the 'results' stream stage 1 writes and stage 2 reads. */
function brokerWithResults(source: SourceSpec): MemoryBroker {
  const broker = brokerWith(source);
  broker.createStream('results');
  return broker;
}

const runStage = (broker: MemoryBroker, stage: 1 | 2, one: JobSpec, two: StageTwoSpec) =>
  (stage === 1
    ? buildJob(one, broker.source('source'), broker.target('results', { producer: 'stage-1' }))
    : stageTwo(two, broker.source('results'), broker.target('target', { producer: 'stage-2' }))
  ).run({ untilCaughtUp: true });

const bytesOf = (broker: MemoryBroker, stream: string) =>
  broker.messages(stream).map((m) => m.bytes);

/** Source messages stage 2 counted: what its outputs add up, and its late values' counts. */
function countedByStageTwo(broker: MemoryBroker, compacted: boolean): number {
  let counted = 0;
  for (const result of bytesOf(broker, 'target').map((m) => decodeResult(m))) {
    for (const output of result.outputs) {
      counted += compacted ? (output.value as StageTwoValue).count : (output.value as number);
    }
    for (const value of result.late) counted += (value as StageTwoValue).count;
  }
  return counted;
}

describe('two jobs chained by fromResults on the embedded broker', () => {
  it(
    'should write a byte-identical final target, count each source message once end to end and publish increasing ids, whatever crashes',
    async () => {
      const coverage = new Coverage('two-stage pipelines');
      await fc.assert(
        fc.asyncProperty(
          sourceArb({ garbage: true, minLength: 10 }),
          jobArb({ deadLetter: true }),
          stageTwoArb,
          stageCrashArb,
          async (source, one, two, crashes) => {
            coverage.run();
            const expected = brokerWithResults(source);
            await runStage(expected, 1, one, two);
            await runStage(expected, 2, one, two);

            const broker = brokerWithResults(source);
            const fired = { 1: false, 2: false };
            for (const crash of crashes) {
              const { stage, ...spec } = crash;
              const fault = broker.injectFault({
                stream: stage === 1 ? 'results' : 'target',
                ...spec,
              });
              try {
                await runStage(broker, stage, one, two);
              } catch (error) {
                if (!(error instanceof SimulatedCrash)) throw error;
              }
              if (fault.fired) fired[stage] = true;
              broker.clearFaults();
            }
            await runStage(broker, 1, one, two);
            await runStage(broker, 2, one, two);

            expect(bytesOf(broker, 'results')).toEqual(bytesOf(expected, 'results'));
            expect(bytesOf(broker, 'target')).toEqual(bytesOf(expected, 'target'));
            expectStrictlyIncreasing(
              broker.chunks('target').map((c) => c.writer?.publishingId ?? -1n),
            );

            // Stage 1 counts each source message once; stage 2's steps tile stage 1's offsets
            // (a step boundary only between messages) and count again exactly what stage 1's
            // outputs in those offsets counted.
            expectEveryMessageCountedOnce(stepsOf(bytesOf(broker, 'results')));
            const results = broker.messages('results');
            const steps = bytesOf(broker, 'target').map((m) => decodeResult(m));
            let next = 0n;
            for (const step of steps) {
              expect(step.firstOffset).toBe(next);
              expect(step.messages).toBe(Number(step.lastOffset - step.firstOffset + 1n));
              next = step.lastOffset + 1n;
            }
            const covered = results
              .filter((m) => m.offset < next)
              .flatMap((m) => decodeResult(m.bytes).outputs);
            const compacted = two.window.kind.startsWith('compact');
            expect(countedByStageTwo(broker, compacted)).toBe(
              covered.reduce((n, o) => n + o.count, 0),
            );

            coverage.count('runs with several stage-2 steps', steps.length >= 2);
            coverage.count(
              'runs where stage 2 read a message of several outputs',
              one.pack !== 'batch' &&
                results.some((m) => m.offset < next && decodeResult(m.bytes).outputs.length >= 2),
            );
            coverage.count('runs with a crash in stage 1', fired[1]);
            coverage.count('runs with a crash in stage 2', fired[2]);
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates(RATES);
    },
    PROPERTY_TIMEOUT_MS,
  );
});
