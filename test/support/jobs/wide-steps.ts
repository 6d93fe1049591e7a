// The job of the multi-write SIGKILL test and of its child process: one-second step windows,
// each holding one message of every key k0..k99999, so that each step's result has 100,000
// outputs and takes several writes of a target's default limit (about 1 MB each); and its
// source messages, the same bytes whichever broker stores them.
import {
  aggregate,
  jsonMessage,
  type Runner,
  type Source,
  type Target,
} from '../../../src/index.js';

export const WIDE_STEPS_PRODUCER = 'wide-steps-job';
/** Keys per window, and so outputs per step. */
export const WIDE_KEYS = 100_000;
const T0 = Date.UTC(2026, 0, 1);

export interface KeyedValue {
  readonly k: number;
  readonly v: number;
}

/**
 * The source of `windows` steps: message `i` of window `w` (offset `w * WIDE_KEYS + i`) is key
 * `i`'s, inside second `w`; one more message opens window `windows` and so closes the last.
 */
export function wideStepsSource(windows: number): Uint8Array[] {
  const messages: Uint8Array[] = [];
  for (let w = 0; w <= windows; w++) {
    const count = w === windows ? 1 : WIDE_KEYS;
    for (let i = 0; i < count; i++) {
      messages.push(jsonMessage(wideValue(w, i), { creationTime: T0 + w * 1000 + (i % 1000) }));
    }
  }
  return messages;
}

/** The value of key `i` in window `w`: what the source's message for it holds. */
export const wideValue = (w: number, i: number): KeyedValue => ({ k: i, v: (i + w) % 10 });

/** The last source offset of step `w` (0-based) of {@link wideStepsSource}. */
export const wideStepLastOffset = (w: number): bigint => BigInt((w + 1) * WIDE_KEYS - 1);

/** The job: per key `k<k>` and one-second window, the sum of its values. */
export function wideStepsJob(source: Source, target: Target): Runner<KeyedValue, number, number> {
  return aggregate<KeyedValue>(source)
    .tumbling('1s')
    .key((m) => `k${m.k}`)
    .reduce((sum, m) => sum + m.v, 0)
    .to(target);
}
