import type { CorpusShape } from '../corpus.js';

/** The window kinds of the hot-path cases; every one ends its steps at the corpus's bursts. */
export const WINDOW_KINDS = ['tumbling-1m', 'count', 'session', 'compaction'] as const;
export type WindowKind = (typeof WINDOW_KINDS)[number];

export const TUMBLING_MS = 60_000;
/** Longer than any gap within a burst (at most 6 s), shorter than the minute between bursts. */
export const SESSION_GAP_MS = 30_000;

/** Count and compaction steps hold one burst, like the time-based kinds. */
export function countOf(shape: CorpusShape): number {
  return shape.windowMessages;
}

/**
 * What one closed window produced, the same whoever computed it: keys, messages, and the sum
 * of the per-key values (sums for the aggregating kinds, latest values for compaction).
 */
export interface WindowDigest {
  readonly keys: number;
  readonly messages: number;
  readonly total: number;
}
