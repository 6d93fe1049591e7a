import type { MergeKey } from './merge-key.js';

/**
 * What a result records of a merge of several inputs, so that a restart rebuilds the merged
 * sequence from `position` on, item for item (docs/internals/many-inputs.md, "The resume
 * point of N inputs").
 */
export interface MergeRecord {
  /** The first merged position the restart must produce again. */
  readonly position: bigint;
  /**
   * The key of the item at `position - 1`: the items at `position` and after are exactly those
   * whose key is above it (the sequence is sorted). Absent for position 0.
   */
  readonly after?: MergeKey;
  /** One per input, in the job's order of inputs. */
  readonly inputs: readonly InputRecord[];
}

/** Where one input is read again from, and what it needs to give its items the same keys. */
export interface InputRecord {
  /** The lowest offset of the input's items at or after the record's position (or the next offset to read). */
  readonly from: bigint;
  /** The latest event time among the input's messages before `from`; -Infinity if none. */
  readonly maxEventTime: number;
  /**
   * The floors in force from `from` on, each from its offset on (the first may begin before
   * `from`): set when the input came back after being left out as idle, at the bound the
   * others had reached then, so that its items pass nothing released meanwhile.
   */
  readonly floors: readonly InputFloor[];
}

/** From `offset` on, an input's merge times and watermark are at least `floor`. */
export interface InputFloor {
  readonly offset: bigint;
  readonly floor: number;
}
