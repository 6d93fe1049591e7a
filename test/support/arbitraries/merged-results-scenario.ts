// Random two-stage pipelines over several inputs on the embedded broker: a stage-1 job per input
// (an event-time window per key, every packing, early updates or not) writing to its own result
// stream, and a stage-2 job over all of them (`mergeInputs([fromResults(...), ...])`). Each
// input ends with three markers far past its data, so that stage 1 closes every window of the
// data and stage 2's merge passes all of them: what stage 2 counted is then exactly what stage
// 1 output.
import fc from 'fast-check';
import {
  aggregate,
  fromResults,
  jsonMessage,
  mergeInputs,
  type LatePolicy,
  type OutputValue,
  type Runner,
  type Source,
  type Target,
} from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import {
  WINDOW_MS,
  brokerWithInputs,
  inputName,
  sumPerWindow,
  windowOf,
  type InputMessage,
  type InputSpec,
} from './merged-inputs-scenario.js';
import { packings, type JobSpec } from './scenario.js';

/** The key of the markers, in both stages: stage 2 counts nothing of theirs. */
export const MARKER = 'marker';

/** Far past any input's data (at most ~120 messages of steps up to 8 s after a 3 s skew). */
const MARKERS_FROM = Date.UTC(2026, 0, 1) + 10_000_000;

/**
 * A tumbling window of `WINDOW_MS`, a hopping one of twice that advancing by it, or (stage 2
 * only: stage 1's sessions would not come in window order) a session of a 700 ms gap.
 */
export interface WindowOfStage {
  readonly kind: 'tumbling' | 'hopping' | 'session';
  readonly grace: number;
}

export interface StageOneSpec {
  readonly window: WindowOfStage;
  readonly maxOutOfOrderness: number;
  readonly keyed: boolean;
  readonly late: Exclude<LatePolicy, 'include'>;
  readonly early: boolean;
  readonly packing: Pick<JobSpec, 'pack' | 'format'>;
}

export interface StageTwoSpec {
  readonly window: WindowOfStage;
  readonly maxOutOfOrderness: number;
  readonly keyed: boolean;
  /** fromResults' policy for stage 1's late values. */
  readonly late: 'skip' | 'count';
  /** Each output's event time: its window's start (fromResults' default) or its last ms. */
  readonly time: 'start' | 'end';
  readonly packing: Pick<JobSpec, 'pack' | 'format'>;
}

const windowOfStageArb = (...kinds: WindowOfStage['kind'][]): fc.Arbitrary<WindowOfStage> =>
  fc.record({ kind: fc.constantFrom(...kinds), grace: fc.constantFrom(0, 200, 1_000) });

export const stageOneArb: fc.Arbitrary<StageOneSpec> = fc.record({
  window: windowOfStageArb('tumbling', 'hopping'),
  maxOutOfOrderness: fc.constantFrom(0, 300, 1_000),
  keyed: fc.boolean(),
  late: fc.constantFrom<StageOneSpec['late']>('side', 'drop'),
  early: fc.boolean(),
  // Messages of several outputs are what stage 2 must keep whole: not batch half the time.
  packing: fc.constantFrom(...packings, ...packings.filter((p) => p.pack !== 'batch')),
});

export const stageTwoArb: fc.Arbitrary<StageTwoSpec> = fc.record({
  window: windowOfStageArb('tumbling', 'hopping', 'session'),
  maxOutOfOrderness: fc.constantFrom(0, 300, 1_000),
  keyed: fc.boolean(),
  late: fc.constantFrom<StageTwoSpec['late']>('skip', 'count'),
  time: fc.constantFrom<StageTwoSpec['time']>('start', 'end'),
  packing: fc.constantFrom(...packings),
});

/** How many windows of stage 2 each value goes to. */
export const windowsPerValue = (spec: StageTwoSpec): number =>
  spec.window.kind === 'hopping' ? 2 : 1;

/** Stage 1's result stream of input `input`. */
export const resultsName = (input: number): string => `results-${input}`;

/**
 * The inputs' broker (./merged-inputs-scenario.ts) and a result stream per input; each input
 * ends with the markers unless `markersLater` (then `appendRest` adds them).
 */
export function brokerWithResults(
  inputs: readonly InputSpec[],
  markersLater = false,
): MemoryBroker {
  const broker = brokerWithInputs(inputs);
  inputs.forEach((_, i) => broker.createStream(resultsName(i)));
  if (!markersLater)
    appendRest(
      broker,
      inputs.map(() => ({ chunks: [] })),
    );
  return broker;
}

/** Appends to each input its chunks in `rest`, then the markers. */
export function appendRest(broker: MemoryBroker, rest: readonly InputSpec[]): void {
  rest.forEach((input, i) => {
    for (const chunk of [...input.chunks, markers()]) {
      broker.append(
        inputName(i),
        chunk.map((message) => jsonMessage(message)),
      );
    }
  });
}

/**
 * Three markers, ten windows apart: the first closes every window of the data in stage 1, the
 * next two close the first two markers' windows, so that every result stream goes past the
 * data by more than stage 2's disorder allowance and window.
 */
export function markers(): InputMessage[] {
  return [0, 10, 20].map((windows) => ({
    time: MARKERS_FROM + windows * WINDOW_MS,
    key: MARKER,
    value: 0,
  }));
}

/** Stage 1 over `source`: the sum of the values per key and window. */
export function stageOneJob(
  spec: StageOneSpec,
  source: Source,
  target: Target,
): Runner<InputMessage, number, number> {
  return sumPerWindow(
    aggregate<InputMessage>(source),
    spec,
    (message) => (message.key === MARKER || spec.keyed ? message.key : 'all'),
    target,
    { ...spec.packing, retryDelayMs: 0 },
  );
}

/** Stage 2 over the result streams `sources`: how many source messages stage 1's outputs folded. */
export function stageTwoJob(
  spec: StageTwoSpec,
  sources: readonly Source[],
  target: Target,
): Runner<OutputValue<number>, number, number> {
  const inputs = sources.map((source) =>
    fromResults<number>(source, { late: spec.late, deadLetters: 'skip' }),
  );
  const merged = aggregate(mergeInputs(inputs, { idleAfter: 'never' }));
  const timed = spec.time === 'end' ? merged.eventTime((output) => output.end - 1) : merged;
  return timed
    .key((output) => (spec.keyed ? String(output.key) : 'all'))
    .window(windowOf(spec.window))
    .maxOutOfOrderness(spec.maxOutOfOrderness)
    .late('side')
    .aggregate({
      init: () => 0,
      add: (count, output) => count + (output.key === MARKER ? 0 : output.count),
      result: (count) => count,
      merge: (first, second) => first + second,
    })
    .to(target, { ...spec.packing, retryDelayMs: 0 });
}

/** Stage 1 of input `input` on `broker`, to its result stream. */
export const stageOneOn = (broker: MemoryBroker, spec: StageOneSpec, input: number) =>
  stageOneJob(
    spec,
    broker.source(inputName(input)),
    broker.target(resultsName(input), { producer: `stage-1-${input}` }),
  );

/** Stage 2 on `broker`, over the result streams of `inputs` inputs, to 'target'. */
export const stageTwoOn = (broker: MemoryBroker, spec: StageTwoSpec, inputs: number) =>
  stageTwoJob(
    spec,
    Array.from({ length: inputs }, (_, i) => broker.source(resultsName(i))),
    broker.target('target', { producer: 'stage-2' }),
  );
