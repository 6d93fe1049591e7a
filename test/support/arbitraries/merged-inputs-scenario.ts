// Random jobs over several inputs (`mergeInputs`) on the embedded broker: 2 to 4 input streams
// of event times with skew between them, disorder within each (some late), idle stretches (an
// input silent in event time while the others go on), filtered messages and random chunking;
// an event-time window (tumbling, hopping or session), keyed or not, with a late policy and a
// packing. What the property tests over several inputs share.
import fc from 'fast-check';
import {
  aggregate,
  hopping,
  jsonMessage,
  mergeInputs,
  session,
  tumbling,
  type LatePolicy,
  type Logger,
  type MergeOptions,
  type PipelineBuilder,
  type TargetOptions,
  type Runner,
  type Source,
  type Target,
  type WatermarkWindowSpec,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { packings, type JobSpec } from './scenario.js';
import type { MergedInputMessage } from '../models/merged-order.js';

/** One message of an input: its event time, key and value; `drop`: the job's filter refuses it. */
export type InputMessage = MergedInputMessage;

/** One input: its messages in offset order, cut into chunks as the broker stores them. */
export interface InputSpec {
  readonly chunks: readonly (readonly InputMessage[])[];
}

export type MergedWindow =
  | { readonly kind: 'tumbling'; readonly grace: number }
  | { readonly kind: 'hopping'; readonly grace: number }
  | { readonly kind: 'session'; readonly grace: number };

export interface MergedJobSpec {
  readonly window: MergedWindow;
  readonly maxOutOfOrderness: number;
  readonly keyed: boolean;
  readonly late: Exclude<LatePolicy, 'include'>;
  readonly packing: Pick<JobSpec, 'pack' | 'format'>;
  readonly early: boolean;
}

export interface MergedScenario {
  readonly inputs: readonly InputSpec[];
  readonly job: MergedJobSpec;
  /** How far each input starts behind the first in event time, ms. */
  readonly skews: readonly number[];
}

/** The tumbling size (and hopping advance); hopping windows are twice as long. */
export const WINDOW_MS = 1_000;
const BASE_TIME = Date.UTC(2026, 0, 1);

const messageArb = fc.record({
  key: fc.constantFrom('a', 'b', 'c'),
  value: fc.integer({ min: -100, max: 100 }),
  // Mostly forward, sometimes back (disorder, some beyond any allowance: late), sometimes an
  // idle stretch: the input says nothing for several windows while the others go on.
  step: fc.oneof(
    { weight: 16, arbitrary: fc.integer({ min: 0, max: 400 }) },
    { weight: 4, arbitrary: fc.integer({ min: -1_500, max: -1 }) },
    { weight: 1, arbitrary: fc.integer({ min: 3_000, max: 8_000 }) },
  ),
  drop: fc.integer({ min: 0, max: 14 }).map((n) => n === 0),
});

function inputArb(skew: number): fc.Arbitrary<InputSpec> {
  return fc
    .tuple(
      fc.array(messageArb, { minLength: 20, maxLength: 120, size: 'max' }),
      fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 30, maxLength: 30 }),
    )
    .map(([steps, cuts]) => {
      let time = BASE_TIME + skew;
      const messages = steps.map(({ key, value, step, drop }): InputMessage => {
        time = Math.max(BASE_TIME, time + step);
        return drop ? { time, key, value, drop } : { time, key, value };
      });
      const chunks: InputMessage[][] = [];
      for (let at = 0, cut = 0; at < messages.length; cut++) {
        const size = cuts[cut % cuts.length] as number;
        chunks.push(messages.slice(at, at + size));
        at += size;
      }
      return { chunks };
    });
}

const jobArb: fc.Arbitrary<MergedJobSpec> = fc.record({
  window: fc.oneof(
    fc.record({ kind: fc.constant('tumbling' as const), grace: fc.constantFrom(0, 200) }),
    fc.record({ kind: fc.constant('hopping' as const), grace: fc.constantFrom(0, 200) }),
    fc.record({ kind: fc.constant('session' as const), grace: fc.constantFrom(0, 200) }),
  ),
  maxOutOfOrderness: fc.constantFrom(0, 300, 1_000),
  keyed: fc.boolean(),
  late: fc.constantFrom<Exclude<LatePolicy, 'include'>>('side', 'drop'),
  packing: fc.constantFrom(...packings),
  early: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
});

/** 2 to 4 inputs, the later ones skewed up to three windows behind or ahead of the first. */
export const mergedScenarioArb: fc.Arbitrary<MergedScenario> = fc
  .array(fc.constantFrom(0, 0, 500, 1_500, 3_000), { minLength: 1, maxLength: 3 })
  .chain((later) => {
    const skews = [0, ...later];
    return fc.record({
      inputs: fc.tuple(...skews.map((skew) => inputArb(skew))),
      job: jobArb,
      skews: fc.constant(skews),
    });
  });

/** The input streams' names, by index. */
export const inputName = (input: number): string => `input-${input}`;

/** A broker holding the scenario's inputs, chunk by chunk, and an empty 'target'. */
export function brokerWithInputs(inputs: readonly InputSpec[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('target');
  inputs.forEach((input, i) => {
    broker.createStream(inputName(i));
    for (const chunk of input.chunks) {
      broker.append(
        inputName(i),
        chunk.map((message) => jsonMessage(message)),
      );
    }
  });
  return broker;
}

export function windowOf(window: MergedWindow): WatermarkWindowSpec {
  const { grace } = window;
  if (window.kind === 'tumbling') return tumbling(WINDOW_MS, { grace });
  if (window.kind === 'hopping') return hopping(2 * WINDOW_MS, WINDOW_MS, { grace });
  return session(700, { grace });
}

/** The job over the broker's inputs, publishing to 'target' as 'merged-job'. */
export function mergedJob(
  broker: MemoryBroker,
  inputs: number,
  spec: MergedJobSpec,
  options: MergeOptions = { idleAfter: 'never' },
  logger?: Logger,
): Runner<InputMessage, number, number> {
  const sources = Array.from({ length: inputs }, (_, i) => broker.source(inputName(i)));
  const target = broker.target('target', { producer: 'merged-job' });
  return mergedJobOver(sources, target, spec, options, logger);
}

/** The job over `sources`, on either broker, publishing to `target`. */
export function mergedJobOver(
  sources: readonly Source[],
  target: Target,
  spec: MergedJobSpec,
  options: MergeOptions = { idleAfter: 'never' },
  logger?: Logger,
): Runner<InputMessage, number, number> {
  const messages = aggregate<InputMessage>(mergeInputs(sources, options));
  const toOptions = { ...spec.packing, ...(logger === undefined ? {} : { logger }) };
  return sumPerWindow(messages, spec, (message) => keyOf(spec, message), target, toOptions);
}

/** What `sumPerWindow` takes of a job's spec. */
export type SumSpec = Pick<MergedJobSpec, 'window' | 'maxOutOfOrderness' | 'late' | 'early'>;

/**
 * The sum of the messages' values per key and window, the job of every scenario over several
 * inputs (and their stage 1): dropped messages filtered out, each at its own time.
 */
export function sumPerWindow(
  messages: PipelineBuilder<InputMessage>,
  spec: SumSpec,
  key: (message: InputMessage) => string,
  target: Target,
  toOptions: TargetOptions<number>,
): Runner<InputMessage, number, number> {
  const windowed = messages
    .filter((message) => message.drop !== true)
    .eventTime((message) => message.time)
    .key(key)
    .window(windowOf(spec.window))
    .maxOutOfOrderness(spec.maxOutOfOrderness)
    .late(spec.late);
  const emitting = spec.early ? windowed.emit({ early: 'each-result' }) : windowed;
  return emitting
    .aggregate({
      init: () => 0,
      add: (sum, message) => sum + message.value,
      result: (sum) => sum,
      merge: (first, second) => first + second,
    })
    .to(target, toOptions);
}

/** The job's key of a message: its own, or one key for all. */
export function keyOf(spec: MergedJobSpec, message: InputMessage): string {
  return spec.keyed ? message.key : 'all';
}
