import type { Key } from '../../common/keyed-output.js';

/** A message the job's filter refused: in the merged sequence, counted, in no window. */
export const FILTERED: unique symbol = Symbol('filtered');

/**
 * A message of one input of a job over several inputs, read once by its input's reader before
 * the merge: its value and key (its event time is the merge's), or FILTERED.
 */
export type DecodedMessage<T> = { readonly value: T; readonly key: Key } | typeof FILTERED;
