import type { MergeKey } from '../../result-format/merge-record.js';

/** Negative when `a` goes before `b` in the merged sequence, positive after, 0 for the same item. */
export function compareMergeKeys(a: MergeKey, b: MergeKey): number {
  if (a.mergeTime !== b.mergeTime) return a.mergeTime < b.mergeTime ? -1 : 1;
  if (a.input !== b.input) return a.input - b.input;
  return a.offset === b.offset ? 0 : a.offset < b.offset ? -1 : 1;
}
