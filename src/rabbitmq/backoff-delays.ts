import { ConfigError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';

/** Exponential backoff: the first delay, doubled per failure up to the cap. */
export interface BackoffDelays {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

/**
 * The exponential backoff settings a source's `reconnect` and `connect()` share, checked:
 * both delays are timer durations, and the cap is not below the first delay.
 */
export function backoffDelays(
  prefix: string,
  given: { readonly initialDelayMs?: number; readonly maxDelayMs?: number },
): BackoffDelays {
  const initialDelayMs = timerMs(`${prefix}initialDelayMs`, given.initialDelayMs ?? 100);
  const maxDelayMs = timerMs(`${prefix}maxDelayMs`, given.maxDelayMs ?? 5_000);
  if (maxDelayMs < initialDelayMs) {
    throw new ConfigError(
      `${prefix}maxDelayMs`,
      `must be >= initialDelayMs (${initialDelayMs} ms)`,
      maxDelayMs,
    );
  }
  return { initialDelayMs, maxDelayMs };
}

/** The delay before retry number `retry` (1 for the first) after as many failures. */
export function backoffDelay(delays: BackoffDelays, retry: number): number {
  return Math.min(delays.maxDelayMs, delays.initialDelayMs * 2 ** (retry - 1));
}
