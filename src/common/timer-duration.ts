import { ConfigError } from './errors.js';

/**
 * Node fires a timer whose delay is not a positive 32-bit integer after about 1 ms (with a
 * TimeoutOverflowWarning), so `Infinity` or 3e9 as a timeout would make it fire at once.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Checks a setting that becomes a timer delay: a finite number of milliseconds, > 0 (or
 * ≥ 0 with `allowZero`), at most `MAX_TIMER_MS` (about 24.8 days). Returns it unchanged.
 */
export function timerMs(parameter: string, value: unknown, allowZero = false): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ConfigError(parameter, 'must be a finite number of milliseconds', value);
  }
  if (allowZero ? value < 0 : value <= 0) {
    throw new ConfigError(parameter, allowZero ? 'must be >= 0 ms' : 'must be > 0 ms', value);
  }
  if (value > MAX_TIMER_MS) {
    throw new ConfigError(
      parameter,
      `must be at most ${MAX_TIMER_MS} ms (2^31 - 1, the longest timer Node keeps)`,
      value,
    );
  }
  return value;
}
