/** What `run()` takes: how a job stops. */
export interface RunOptions {
  /** Stops the job: the step in progress is dropped (it is re-read on the next start). */
  readonly signal?: AbortSignal;
  /**
   * Stop once every message that was in the source when the job (re)started has been
   * processed, instead of waiting for more — for batch use and tests. The open step is
   * not published: it is incomplete, and publishing it would break replay stability —
   * unless the job was built with `flush: { caughtUp: true }` (see `FlushOptions`).
   */
  readonly untilCaughtUp?: boolean;
}

/** What a run did, returned when it stops. */
export interface RunSummary {
  /**
   * Results of this run the broker confirmed, less those known to be duplicates. With a second
   * instance of the job publishing under the same name at once, this counts the steps the
   * other one stored first as well: a confirm does not tell a store from a discard.
   */
  readonly results: number;
  /**
   * Results published again after a restart and confirmed as duplicates (publishing id not
   * above the last one read at the resume), which the broker discarded.
   */
  readonly duplicates: number;
  /** Times the job resumed from the broker's last publishing id after a retriable error. */
  readonly restarts: number;
}
