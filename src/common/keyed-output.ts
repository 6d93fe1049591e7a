/** A key as a step groups by it: `null` when the job has no key function. */
export type Key = string | number | null;

/** One key's result within a step: its key, how many values it absorbed, and the aggregate. */
export interface KeyedOutput<R> {
  /** The key, `null` when the job has no key function. */
  readonly key: Key;
  /** How many values the key absorbed in the window. */
  readonly count: number;
  /** The aggregate: the aggregator's `result` for the key. */
  readonly value: R;
  /**
   * The output's own window bounds, for event-time windows (whose outputs in one result have
   * windows of their own); absent for step windows, whose outputs share the step's window.
   */
  readonly start?: number;
  /** The output's own window end (exclusive), epoch ms, for event-time windows; as `start`. */
  readonly end?: number;
  /** false for an early update of a window still open; absent for a window's final output. */
  readonly final?: false;
  /** true when the window was published by a flush before, and this output continues it. */
  readonly continues?: true;
}
