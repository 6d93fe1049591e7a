// Stage 2 over a partitioned stage 1 on the embedded broker (`mergeInputs([fromResults(...),
// ...])`): random stage-1 jobs, one per input (2 to 4 inputs with skew, disorder, late and
// filtered messages, idle stretches; every packing, early updates or not), their result streams
// merged by a random global stage-2 job. Crashes at random publishes of stage 1 (of any input)
// and of stage 2, stage 2 also run while its inputs are written only in part, must leave every
// stream byte for byte as an uninterrupted run writes it. Stage 2 counts every stage-1 output once and none
// late: a stage-1 result is one item of the merge, placed by its least event time, so no value
// of it can pass a window stage 2 closed (stage 1's outputs come in window order per input).
// And stage 2 restarted from each of its results in turn (a crash right before the next one)
// writes the same bytes: a replay from any merge record.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeResult } from '../../src/index.js';
import type { MemoryBroker } from '../../src/memory/index.js';
import { faultPointArb, runCrashing, type Crash } from '../support/arbitraries/crashes.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { targetBytes } from '../support/arbitraries/memory-scenario.js';
import { WINDOW_MS, mergedScenarioArb } from '../support/arbitraries/merged-inputs-scenario.js';
import {
  MARKER,
  appendRest,
  brokerWithResults,
  resultsName,
  stageOneArb,
  stageOneOn,
  stageTwoArb,
  stageTwoOn,
  windowsPerValue,
  type StageOneSpec,
  type StageTwoSpec,
} from '../support/arbitraries/merged-results-scenario.js';
import { expectSameMessages } from '../support/results/same-bytes.js';
import { expectStrictlyIncreasing } from '../support/results/target-stream.js';

// Each run is an uninterrupted pipeline and up to eight crashed runs of one stage.
const PARAMETERS = propertyParameters(200);

/** A crash of one stage: stage 1's of one input, on its result stream; stage 2's on 'target'. */
interface StageCrash extends Crash {
  readonly stage: 1 | 2;
  /** Stage 1's input (modulo the inputs). */
  readonly input: number;
}

// Either stage, at one of its first publishes (stage 2 publishes fewer results than stage 1).
const stageCrashArb: fc.Arbitrary<StageCrash[]> = fc.array(
  fc.record({
    stage: fc.oneof(
      { weight: 1, arbitrary: fc.constant<1 | 2>(1) },
      { weight: 1, arbitrary: fc.constant<1 | 2>(2) },
    ),
    input: fc.integer({ min: 0, max: 3 }),
    atPublish: fc.integer({ min: 1, max: 4 }),
    point: faultPointArb,
  }),
  { minLength: 1, maxLength: 8, size: 'max' },
);

const bytesOf = (broker: MemoryBroker, stream: string): Uint8Array[] =>
  broker.messages(stream).map((message) => message.bytes);

/** Runs stage 1 of every input to the end of what it reads. */
async function runStageOne(broker: MemoryBroker, inputs: number, one: StageOneSpec): Promise<void> {
  for (let input = 0; input < inputs; input++) {
    await stageOneOn(broker, one, input).run({ untilCaughtUp: true });
  }
}

/** Runs stage 1 of every input, then stage 2, each to the end of what it reads. */
async function runPipeline(
  broker: MemoryBroker,
  inputs: number,
  one: StageOneSpec,
  two: StageTwoSpec,
): Promise<void> {
  await runStageOne(broker, inputs, one);
  await stageTwoOn(broker, two, inputs).run({ untilCaughtUp: true });
}

/** The source messages stage 1's final outputs folded, but the markers'. */
function countedByStageOne(broker: MemoryBroker, inputs: number): number {
  let counted = 0;
  for (let input = 0; input < inputs; input++) {
    for (const bytes of bytesOf(broker, resultsName(input))) {
      for (const output of decodeResult(bytes).outputs) {
        if (output.final && output.key !== MARKER) counted += output.count;
      }
    }
  }
  return counted;
}

/** What the stage-2 job about to start resumes from: counted when its target holds a record. */
function countRestart(coverage: Coverage, broker: MemoryBroker): void {
  const last = broker.messages('target').at(-1);
  const record = last === undefined ? undefined : decodeResult(last.bytes).recovery?.merge;
  if (record === undefined) return;
  coverage.count('stage-2 restarts from a merge record');
  coverage.count(
    'stage-2 restarts reading a result stream again from above 0',
    record.inputs.some((input) => input.from > 0n),
  );
}

/** What stage 2 read of stage 1 in the uninterrupted run. */
function countScenario(coverage: Coverage, broker: MemoryBroker, inputs: number): void {
  const results = Array.from({ length: inputs }, (_, i) =>
    bytesOf(broker, resultsName(i)).map((bytes) => decodeResult(bytes)),
  ).flat();
  coverage.count(
    'runs where stage 2 read a result of several outputs',
    results.some((result) => result.outputs.filter((output) => output.final).length >= 2),
  );
  coverage.count(
    'runs where stage 2 read a result of outputs of several windows',
    results.some(
      (result) => new Set(result.outputs.filter((o) => o.final).map((o) => o.start)).size >= 2,
    ),
  );
  coverage.count(
    'runs where stage 2 read a result of no final output',
    results.some((result) => result.outputs.every((output) => !output.final)),
  );
  coverage.count('runs of 3 or 4 inputs', inputs >= 3);
  coverage.count(
    'runs where stage 2 published 3 results or more',
    broker.messages('target').length >= 3,
  );
}

describe('stage 2 over a partitioned stage 1 on the embedded broker', () => {
  it(
    'should count every stage-1 output once, none late, byte for byte the same through crashes of either stage',
    async () => {
      const coverage = new Coverage('stage 2 over merged results through crashes');
      await fc.assert(
        fc.asyncProperty(
          mergedScenarioArb,
          stageOneArb,
          stageTwoArb,
          stageCrashArb,
          // The part of each input's chunks stage 1 reads first, and the crash the rest comes before.
          fc.integer({ min: 0, max: 10 }).map((tenths) => tenths / 10),
          fc.integer({ min: 0, max: 8 }),
          async ({ inputs, skews }, one, two, crashes, cut, restAt) => {
            coverage.run();
            const count = inputs.length;
            const expected = brokerWithResults(inputs);
            await runPipeline(expected, count, one, two);
            countScenario(coverage, expected, count);
            coverage.count(`stage 2 ${two.window.kind}`);
            coverage.count(
              'runs with inputs skewed by a window or more',
              skews.some((skew) => skew >= WINDOW_MS),
            );

            // Every stage-1 output counted once by stage 2 (in each of its windows), none late.
            const published = bytesOf(expected, 'target').map((bytes) => decodeResult(bytes));
            const counted = published
              .flatMap((result) => result.outputs)
              .reduce((sum, output) => sum + (output.value as number), 0);
            expect(counted).toBe(windowsPerValue(two) * countedByStageOne(expected, count));
            expect(published.filter((result) => result.late.length > 0)).toEqual([]);

            // The inputs hold a first part when the crashes begin, the rest comes among them:
            // stage 2 reads result streams that grow.
            const cuts = inputs.map((input) => Math.floor(input.chunks.length * cut));
            const broker = brokerWithResults(
              inputs.map((input, i) => ({ chunks: input.chunks.slice(0, cuts[i]) })),
              true,
            );
            const fired = { 1: false, 2: false };
            for (const [c, { stage, input, ...crash }] of crashes.entries()) {
              if (c === restAt) {
                appendRest(
                  broker,
                  inputs.map((input, i) => ({ chunks: input.chunks.slice(cuts[i]) })),
                );
              }
              const stream = stage === 1 ? resultsName(input % count) : 'target';
              if (stage === 2) {
                // Stage 1 catches up first: stage 2 then has results of every input to read.
                await runStageOne(broker, count, one);
                countRestart(coverage, broker);
              }
              const job =
                stage === 1
                  ? stageOneOn(broker, one, input % count)
                  : stageTwoOn(broker, two, count);
              const run = await runCrashing(broker, { stream, ...crash }, job);
              if (run.fired) fired[stage] = true;
            }
            if (restAt >= crashes.length) {
              appendRest(
                broker,
                inputs.map((input, i) => ({ chunks: input.chunks.slice(cuts[i]) })),
              );
            }
            coverage.count('runs with a crash in stage 1', fired[1]);
            coverage.count('runs with a crash in stage 2', fired[2]);
            await runStageOne(broker, count, one);
            countRestart(coverage, broker);
            await stageTwoOn(broker, two, count).run({ untilCaughtUp: true });

            for (let input = 0; input < count; input++) {
              const stream = resultsName(input);
              expectSameMessages(bytesOf(broker, stream), bytesOf(expected, stream), stream);
            }
            expectSameMessages(targetBytes(broker), targetBytes(expected));
            expectStrictlyIncreasing(
              broker.chunks('target').map((chunk) => chunk.writer?.publishingId ?? -1n),
            );
          },
        ),
        PARAMETERS,
      );
      // Expected occurrences per run, below what 3 × 200 runs measured (see Coverage.expectRates).
      coverage.expectRates({
        'runs where stage 2 read a result of several outputs': 0.7,
        'runs where stage 2 read a result of outputs of several windows': 0.65,
        'runs where stage 2 read a result of no final output': 0.08,
        'runs of 3 or 4 inputs': 0.55,
        'stage 2 tumbling': 0.25,
        'stage 2 hopping': 0.25,
        'stage 2 session': 0.25,
        'runs where stage 2 published 3 results or more': 0.9,
        'runs with inputs skewed by a window or more': 0.5,
        'runs with a crash in stage 1': 0.3,
        'runs with a crash in stage 2': 0.35,
        'stage-2 restarts from a merge record': 0.9,
        'stage-2 restarts reading a result stream again from above 0': 0.8,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
  it(
    'should write the same bytes when stage 2 restarts from any of its results',
    async () => {
      const coverage = new Coverage('stage 2 over merged results restarted from every result');
      await fc.assert(
        fc.asyncProperty(
          mergedScenarioArb,
          stageOneArb,
          stageTwoArb,
          async ({ inputs }, one, two) => {
            coverage.run();
            const count = inputs.length;
            const expected = brokerWithResults(inputs);
            await runPipeline(expected, count, one, two);
            // One write per result (a chunk; packed as a batch, of one message per output).
            const results = expected.chunks('target').length;
            // A crash before its (k + 1)-th publish leaves stage 2's first k results stored.
            for (let stored = 1; stored < results; stored++) {
              const broker = brokerWithResults(inputs);
              await runStageOne(broker, count, one);
              const run = await runCrashing(
                broker,
                { stream: 'target', atPublish: stored + 1, point: 'before-publish' },
                stageTwoOn(broker, two, count),
              );
              expect(run.crashed).toBe(true);
              expect(broker.chunks('target').length).toBe(stored);
              countRestart(coverage, broker);
              await stageTwoOn(broker, two, count).run({ untilCaughtUp: true });
              expectSameMessages(targetBytes(broker), targetBytes(expected));
            }
          },
        ),
        // Each run restarts stage 2 once per result it publishes (tens).
        propertyParameters(25),
      );
      coverage.expectRates({
        'stage-2 restarts from a merge record': 10,
        'stage-2 restarts reading a result stream again from above 0': 8,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
