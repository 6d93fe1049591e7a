/**
 * Where an item of one input goes in the merged sequence of several (docs/internals/many-inputs.md):
 * by its merge time (its event time, raised to its input's watermark and floor when it is late),
 * then by input, then by offset. Unique, since an input's offsets are.
 */
export interface MergeKey {
  readonly mergeTime: number;
  readonly input: number;
  readonly offset: bigint;
}

/** Negative when `a` goes before `b` in the merged sequence, positive after, 0 for the same item. */
export function compareMergeKeys(a: MergeKey, b: MergeKey): number {
  if (a.mergeTime !== b.mergeTime) return a.mergeTime < b.mergeTime ? -1 : 1;
  if (a.input !== b.input) return a.input - b.input;
  return a.offset === b.offset ? 0 : a.offset < b.offset ? -1 : 1;
}
