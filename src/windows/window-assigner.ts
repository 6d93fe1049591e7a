/**
 * Which window does an element belong to (Flink's WindowAssigner), restricted to what a
 * contiguous step can express: there is at most one open window, and an element either
 * falls inside it, before it (late), or in a later window (which ends the step first).
 *
 * Assigners are stateful logic objects built fresh by a window spec for each run; all
 * times are epoch milliseconds of event time, never wall-clock.
 */
export const enum Placement {
  /** Belongs to the open window. */
  Inside = 0,
  /** Event time is before the open window: the job's late policy decides. */
  Late = 1,
  /** Belongs to a later window: the open step ends before this element. */
  Later = 2,
}

/** Decides which window an element falls in: the part of a `WindowSpec` that places elements. */
export interface WindowAssigner {
  /** Opens the window that holds `eventTime` (first element of a step). */
  open(eventTime: number): void;
  /** Where an element with `eventTime` falls relative to the open window. */
  place(eventTime: number): Placement;
  /** Records an element placed Inside (sessions and global windows grow with their elements). */
  add(eventTime: number): void;
  /** Start of the open window, epoch ms, inclusive. */
  readonly start: number;
  /** End of the open window, epoch ms, exclusive. */
  readonly end: number;
  /** Plain-data description of the open window, for results and debugging. */
  snapshot(): { start: number; end: number };
  /**
   * Opens the window a flush published with these bounds (its `snapshot()` then), as it was
   * left: after a restart, a later element of it continues it. Optional: an assigner without
   * it starts afresh after such a restart (its next step is then not marked as continuing).
   */
  reopen?(start: number, end: number): void;
}
