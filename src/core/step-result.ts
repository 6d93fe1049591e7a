import type { KeyedOutput } from '../common/keyed-output.js';
import type { ProcessingStage } from '../common/errors.js';

/** A source message that could not be processed, kept whole in its step's result. */
export interface DeadLetter {
  readonly offset: bigint;
  readonly stage: ProcessingStage;
  readonly error: string;
  /** The source message as stored (the whole AMQP 1.0 message), so it can be re-published. */
  readonly message: Uint8Array;
}

/**
 * Everything one step produced: the unit of effectively-once output. Published as ONE
 * write whose publishing id is `lastOffset`.
 */
export interface StepResult<R> {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  /** Source messages in `firstOffset..lastOffset`, each counted exactly once somewhere below. */
  readonly messages: number;
  /** Bounds of the step's window; null when every message of the step was dead-lettered. */
  readonly window: { readonly start: number; readonly end: number } | null;
  readonly outputs: readonly KeyedOutput<R>[];
  /** Late values kept by the 'side' policy, in offset order. */
  readonly late: readonly unknown[];
  /** Late messages counted and discarded by the 'drop' policy. */
  readonly lateDropped: number;
  /** Messages the job's `.filter()` refused: in the step's offsets, in no output. */
  readonly filtered: number;
  readonly deadLetters: readonly DeadLetter[];
}
