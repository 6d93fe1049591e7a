import type { MergeKey } from '../../result-format/merge-record.js';

/** An input's item of the lowest offset among some, and its input's latest time before it. */
export interface LowestItem {
  readonly offset: bigint;
  /** The latest event time of its input before it: what a record starting at it restores. */
  readonly maxBefore: number;
}

/**
 * The keys of the items a merge released that a record may still need (from the oldest
 * position not forgotten on), in release order: their merge keys and their inputs' latest
 * time before each, never their values, so that a window open over many items does not keep
 * them. Kept in columns, not an object per item (one item each message of a job over several
 * inputs), and dropped from the front by moving a start index, compacted now and then.
 */
export class ReleasedKeys {
  private mergeTimes: number[] = [];
  private inputs: number[] = [];
  private offsets: bigint[] = [];
  private maxBefore: number[] = [];
  /** Index of the first key not forgotten. */
  private start = 0;

  /** Keys kept (released and not forgotten). */
  get length(): number {
    return this.offsets.length - this.start;
  }

  push(key: MergeKey, maxBefore: number): void {
    this.mergeTimes.push(key.mergeTime);
    this.inputs.push(key.input);
    this.offsets.push(key.offset);
    this.maxBefore.push(maxBefore);
  }

  /** The key at `index` (0: the oldest kept). */
  keyAt(index: number): MergeKey {
    const at = this.start + index;
    return {
      mergeTime: this.mergeTimes[at] as number,
      input: this.inputs[at] as number,
      offset: this.offsets[at] as bigint,
    };
  }

  /** Lowers `lowest[input]` to each kept item's from `index` on whose offset is lower. */
  lowestFrom(index: number, lowest: (LowestItem | undefined)[]): void {
    const { inputs, offsets, maxBefore } = this;
    for (let at = this.start + index; at < offsets.length; at++) {
      const input = inputs[at] as number;
      const offset = offsets[at] as bigint;
      const found = lowest[input];
      if (found === undefined || offset < found.offset) {
        lowest[input] = { offset, maxBefore: maxBefore[at] as number };
      }
    }
  }

  /** Forgets the `count` oldest keys. */
  forget(count: number): void {
    this.start += Math.min(count, this.length);
    // Compacted once the forgotten outnumber the kept: each key is copied at most once more.
    if (this.start > this.length) {
      this.mergeTimes = this.mergeTimes.slice(this.start);
      this.inputs = this.inputs.slice(this.start);
      this.offsets = this.offsets.slice(this.start);
      this.maxBefore = this.maxBefore.slice(this.start);
      this.start = 0;
    }
  }
}
