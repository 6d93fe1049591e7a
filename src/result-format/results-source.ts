import { ConfigError, type ProcessingStage } from '../common/errors.js';
import type { Source } from '../ports/ports.js';
import { decodeResult } from './result-decoder.js';
import { type ResultOutput } from './result-format.js';

/**
 * What a stage-2 job does with the late values and dead letters of the stage-1 results it
 * reads. There is no default: they are never mixed into the outputs without a word.
 */
export interface ResultsSourceOptions {
  /**
   * Stage 1's late values (its 'side' policy): 'skip' ignores them; 'count' adds one per
   * value to the stage-2 result's `lateDropped`; 'pass' hands each on as a `LateValue`.
   */
  readonly late: 'skip' | 'count' | 'pass';
  /** Stage 1's dead letters: 'skip' ignores them; 'pass' hands each on as a `DeadLetterValue`. */
  readonly deadLetters: 'skip' | 'pass';
}

/** One (final) output of a stage-1 result, as stage 2 receives it. */
export interface OutputValue<R = unknown> extends Omit<ResultOutput<R>, 'final' | 'continues'> {
  /** What the value is: an output (switch on `type` when late values or dead letters pass too). */
  readonly type: 'output';
}

/** One late value of a stage-1 result, with that result's window bounds (if it had one). */
export interface LateValue {
  /** What the value is: a late value. */
  readonly type: 'late';
  /** The window start of the result that held it, epoch ms; undefined if it had no window. */
  readonly start: number | undefined;
  /** The window end of the result that held it, epoch ms; undefined if it had no window. */
  readonly end: number | undefined;
  /** The late value, as stage 1 decoded it. */
  readonly value: unknown;
}

/** One dead letter of a stage-1 result: the rejected stage-1 source message, whole. */
export interface DeadLetterValue {
  /** What the value is: a dead letter. */
  readonly type: 'dead-letter';
  /** The stage-1 source message's offset. */
  readonly offset: bigint;
  /** The stage-1 stage that rejected it. */
  readonly stage: ProcessingStage;
  /** Why: the message of what that stage threw. */
  readonly error: string;
  /** The stage-1 source message as stored (the whole AMQP 1.0 message). */
  readonly message: Uint8Array;
}

/** Everything a stage-1 result message held that stage 2 aggregates, in section order. */
export interface MessageValues<V> {
  readonly values: readonly V[];
  /**
   * Each value's default event time, by index: an output's own window start; a late value's
   * or dead letter's, its result's window start (undefined when the result had no window).
   */
  readonly times: readonly (number | undefined)[];
  /** Values counted rather than aggregated (the 'count' policy for late values). */
  readonly counted: number;
}

/** Reads one whole message into its values (the step processor's multi-value path). */
export type MessageValuesDecoder<V> = (message: Uint8Array) => MessageValues<V>;

/** A source whose messages are results of another job: built by `fromResults`. */
export class ResultsSource<V> {
  constructor(
    /** The stream of results read (stage 1's target). */
    readonly source: Source,
    /** Reads one result message into the values the job receives. */
    readonly decode: MessageValuesDecoder<V>,
  ) {}
}

type Skipped = 'skip' | 'count';

/**
 * A job source reading the results of another job: `aggregate(fromResults<R>(target, options))`
 * receives one `OutputValue<R>` per output of each result, from either packing, with the
 * output's window start as default event time. A step of such a job ends only between
 * messages, never between two values of one message (they share its offset): see the
 * README's "Chaining stages".
 */
export function fromResults<R = unknown>(
  source: Source,
  options: { readonly late: 'pass'; readonly deadLetters: 'skip' },
): ResultsSource<OutputValue<R> | LateValue>;
export function fromResults<R = unknown>(
  source: Source,
  options: { readonly late: Skipped; readonly deadLetters: 'pass' },
): ResultsSource<OutputValue<R> | DeadLetterValue>;
export function fromResults<R = unknown>(
  source: Source,
  options: { readonly late: Skipped; readonly deadLetters: 'skip' },
): ResultsSource<OutputValue<R>>;
export function fromResults<R = unknown>(
  source: Source,
  options: ResultsSourceOptions,
): ResultsSource<OutputValue<R> | LateValue | DeadLetterValue>;
export function fromResults<R = unknown>(
  source: Source,
  options: ResultsSourceOptions,
): ResultsSource<OutputValue<R> | LateValue | DeadLetterValue> {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
  const { late, deadLetters } = (options ?? {}) as Partial<ResultsSourceOptions>;
  if (late !== 'skip' && late !== 'count' && late !== 'pass') {
    throw new ConfigError('fromResults late', "must be 'skip', 'count' or 'pass'", late);
  }
  if (deadLetters !== 'skip' && deadLetters !== 'pass') {
    throw new ConfigError('fromResults deadLetters', "must be 'skip' or 'pass'", deadLetters);
  }
  return new ResultsSource(source, (message) => {
    const result = decodeResult<R>(message);
    const values: (OutputValue<R> | LateValue | DeadLetterValue)[] = [];
    const times: (number | undefined)[] = [];
    for (const output of result.outputs) {
      // Each window once: an early update is followed by the window's final output.
      if (!output.final) continue;
      const { key, start, end, count, value } = output;
      values.push({ type: 'output', key, start, end, count, value });
      times.push(start);
    }
    if (late === 'pass') {
      for (const value of result.late) {
        values.push({ type: 'late', start: result.windowStart, end: result.windowEnd, value });
        times.push(result.windowStart);
      }
    }
    if (deadLetters === 'pass') {
      for (const letter of result.deadLetters) {
        values.push({ type: 'dead-letter', ...letter });
        times.push(result.windowStart);
      }
    }
    return { values, times, counted: late === 'count' ? result.late.length : 0 };
  });
}
