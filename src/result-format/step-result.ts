import type { Key, KeyedOutput } from '../common/keyed-output.js';
import type { ProcessingStage } from '../common/errors.js';
import type { MergeRecord } from './merge-record.js';

/** A source message that could not be processed, kept whole in its step's result. */
export interface DeadLetter {
  /** The source message's offset (for a 'result' failure: the step's last offset). */
  readonly offset: bigint;
  /** The stage that rejected it. */
  readonly stage: ProcessingStage;
  /** Why: the message of what the stage threw. */
  readonly error: string;
  /** The source message as stored (the whole AMQP 1.0 message), so it can be re-published. */
  readonly message: Uint8Array;
}

/**
 * Everything one step produced: the unit of effectively-once output. Published as ONE
 * write whose publishing id is `lastOffset`.
 */
export interface StepResult<R> {
  /** The first source offset of the step. */
  readonly firstOffset: bigint;
  /** The last source offset of the step: the write's publishing id. */
  readonly lastOffset: bigint;
  /** Source messages in `firstOffset..lastOffset`, each counted exactly once somewhere below. */
  readonly messages: number;
  /** Bounds of the step's window; null when every message of the step was dead-lettered. */
  readonly window: { readonly start: number; readonly end: number } | null;
  /** One output per key (per key and window, for event-time windows), in first-appearance order. */
  readonly outputs: readonly KeyedOutput<R>[];
  /** Late values kept by the 'side' policy, in offset order. */
  readonly late: readonly unknown[];
  /** Late messages counted and discarded by the 'drop' policy. */
  readonly lateDropped: number;
  /** Messages the job's `.filter()` refused: in the step's offsets, in no output. */
  readonly filtered: number;
  /** Messages the job could not process, under `.onError('dead-letter')`, in offset order. */
  readonly deadLetters: readonly DeadLetter[];
  /** Event-time windows only: what a restart from this result needs (see RecoveryState). */
  readonly recovery?: RecoveryState;
  /** Published by a flush (`FlushOptions`) before its windows ended; absent otherwise. */
  readonly flushed?: true;
}

/**
 * What an event-time job's result records for a restart from it: the result's publishing id
 * is the offset at which its windows closed, but windows still open then hold messages from
 * earlier offsets, so the job re-reads the source from `offset`, with the watermark that was
 * in force there, and publishes nothing at or below the result's id again.
 */
export interface RecoveryState {
  /** The watermark after the result's last offset (for readers: how far event time got). */
  readonly watermark: number;
  /** The first offset any window still open after this result needs (last offset + 1 if none). */
  readonly offset: bigint;
  /** The watermark in force before `offset`; -Infinity when no message came before it. */
  readonly offsetWatermark: number;
  /**
   * Count windows per key only: each open window's key and first offset (a key's messages
   * before it, from `offset` on, belong to windows already published), and, when a
   * multi-value message began it, how many of the key's values there came before it.
   * Absent otherwise.
   */
  readonly openCounts?: readonly (readonly [key: Key, firstOffset: bigint, skip?: number])[];
  /**
   * The offset of the last flush (`FlushOptions`) when it is at or after `offset`: a
   * wall-clock decision the re-read must repeat to leave the same windows open. Absent when
   * there is none.
   */
  readonly lastFlush?: bigint;
  /**
   * A job over several inputs (`mergeInputs`) only, whose offsets are merged positions: the
   * merge's record at `offset`, from which a restart reads every input again. Absent otherwise.
   */
  readonly merge?: MergeRecord;
}
