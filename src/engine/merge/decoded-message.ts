import type { Key } from '../../common/keyed-output.js';

/** A message the job's filter refused: in the merged sequence, counted, in no window. */
export const FILTERED: unique symbol = Symbol('filtered');

/**
 * A result of another job (a `fromResults` input), read whole: ONE item of the merge, as it is
 * one offset of its input. Each value goes to the windows of its own event time when the item
 * is released; the item is placed by the least of them (./merging-processor.ts).
 */
export interface DecodedValues<T> {
  readonly values: readonly T[];
  /** Each value's key, by index (empty when the job has no key). */
  readonly keys: readonly Key[];
  /** Each value's event time, by index. */
  readonly times: readonly number[];
  /** Values counted rather than aggregated (`late: 'count'`): added to the result's `lateDropped`. */
  readonly counted: number;
}

/**
 * A message of one input of a job over several inputs, read once by its input's reader before
 * the merge: its value and key (its event time is the merge's), a result's values, or FILTERED.
 */
export type DecodedMessage<T> =
  { readonly value: T; readonly key: Key } | DecodedValues<T> | typeof FILTERED;
