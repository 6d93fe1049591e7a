import type { Aggregator } from '../common/aggregator.js';
import type { Key } from '../common/keyed-output.js';
import type { KeyedWindows, WindowId } from './keyed-windows.js';
import type { Watermark } from './watermark.js';

/**
 * What the window operator lends a window kind while it places values (Flink's WindowContext):
 * the windows' state, and the operations on a window whose bookkeeping is the operator's (the
 * message's offset, early updates, the result being decided).
 */
export interface WindowContext<T, A> {
  readonly windows: KeyedWindows<A>;
  readonly watermark: Watermark;
  readonly aggregator: Aggregator<T, A, unknown>;
  /** The offset of the message being placed. */
  offset(): bigint;
  /** Opens an empty window of `key` at the message being placed (not filed for the watermark). */
  open(key: Key, start: number, end: number): WindowId;
  /**
   * What a window folds its next value into: `init()` for none (NO_WINDOW), a new window or
   * one a flush emptied.
   */
  accumulatorOf(window: WindowId): A;
  /** Stores a window's accumulator after one more value. */
  fold(window: WindowId, accumulator: A): void;
  /** Closes a window now, whatever the watermark: it goes out in the result of this message. */
  close(window: WindowId): void;
}

/** What a kind adds to a result's recovery state (a part of RecoveryState, which it matches). */
export interface KindRecovery {
  readonly openCounts?: readonly (readonly [key: Key, firstOffset: bigint, skip?: number])[];
}

/**
 * One event-time window kind for one run of a job (Flink's WindowAssigner with its Trigger):
 * where a value goes and when its window fires. The operator runs the same sequence for every
 * kind: `place` each value, move the watermark, `closeDue`, publish what closed; and asks the
 * kind what a window reports and what a restart needs.
 */
export interface EventTimeWindows<T> {
  /**
   * Adds a value of `key` at `time` to its windows; false when no window takes it (late).
   * Throws what the aggregate throws, before changing any window.
   */
  place(key: Key, value: T, time: number, replaying: boolean): boolean;
  /** Puts into `into` the windows the watermark has closed, in the documented closing order. */
  closeDue(into: WindowId[]): void;
  /** true: a flush ends the open windows (count windows); false: it empties them, to be continued. */
  readonly endsAtFlush: boolean;
  /** The bounds a window's output reports. */
  bounds(window: WindowId): { start: number; end: number };
  /** A message of several values begins (only a kind that counts a key's values needs it). */
  beginMessage?(): void;
  /** What a result records for a restart beyond the windows' offsets and watermark. */
  recovery?(): KindRecovery;
  /** Takes back what `recovery` recorded, before the re-read. */
  restore?(state: KindRecovery): void;
  /** The re-read reached the restored result's offset: from here on, values are new. */
  endReplay?(): void;
}

/** Fills `starts`/`ends` with the windows of an element at `time` alone. */
export type WindowsOf = (time: number, starts: number[], ends: number[]) => void;

/**
 * What a kind takes of a job's settings and needs of its aggregate. The builder's checks ask
 * this (through src/engine/processor-factory.ts), never the kind's name.
 */
export interface KindRules {
  /**
   * The watermark closes its windows: a message can be late for them, and maxOutOfOrderness
   * applies (false for count windows, closed by their n-th value).
   */
  readonly closedByWatermark: boolean;
  /** Its windows merge (sessions): the aggregate must give `merge`. */
  readonly mergesWindows: boolean;
}

/** A registered window kind: builds its windows from a spec's assignment `S` (./event-time-kinds.ts). */
export interface WindowKind<S> extends KindRules {
  create<T, A>(
    assignment: S,
    context: WindowContext<T, A>,
    options: { readonly multiValue: boolean },
  ): EventTimeWindows<T>;
  /** The windows an element opens alone: what the event-time range check probes. */
  windowsOf(assignment: S): WindowsOf;
  /**
   * How long after its end the watermark closes a window (its grace); undefined for a kind
   * whose windows the watermark does not close.
   */
  graceOf(assignment: S): number | undefined;
}
