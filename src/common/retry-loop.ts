import { ConfigError } from './errors.js';
import { timerMs } from './timer-duration.js';
import type { RetryWarning } from './retry-warning.js';
import { sleep } from './waits.js';

/** How a loop backs off: the first delay, doubled up to the longest, and how many retries in a row it takes. */
export interface RetryPolicy {
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  /** Retriable errors in a row (no progress between them) before the loop gives up; Infinity: never. */
  readonly maxRetries: number;
}

/** The policy of `options` (absent: 100 ms, 10 s, Infinity), checked: a `ConfigError` names a bad one. */
export function retryPolicy(options: {
  readonly retryDelayMs?: number;
  readonly maxRetryDelayMs?: number;
  readonly maxRetries?: number;
}): RetryPolicy {
  const maxRetries = options.maxRetries ?? Infinity;
  if (!(maxRetries === Infinity || (Number.isSafeInteger(maxRetries) && maxRetries >= 0))) {
    throw new ConfigError('maxRetries', 'must be an integer >= 0 or Infinity', maxRetries);
  }
  return {
    retryDelayMs: timerMs('retryDelayMs', options.retryDelayMs ?? 100),
    maxRetryDelayMs: timerMs('maxRetryDelayMs', options.maxRetryDelayMs ?? 10_000),
    maxRetries,
  };
}

/** What a retrying loop needs of its owner (a database sink's stream, an outbox relay). */
export interface RetryLoop {
  readonly policy: RetryPolicy;
  readonly warning: RetryWarning;
  /** Stops the loop: an error seen once it aborted is not retried, nor thrown. */
  readonly signal: AbortSignal;
  /** Whether `error` may pass on retry; any other is thrown as it is. */
  retriable(error: unknown): boolean;
  /** The error to stop with once retries in a row outlast `policy.maxRetries`. */
  exhausted(error: unknown): Error;
  /** Tells of a retry of `error` in `delayMs` (an event, a log line): the warning is the loop's. */
  retrying(error: unknown, delayMs: number): void;
}

/**
 * Runs `attempt` until it returns or `loop.signal` aborts, again after each retriable error
 * with backoff. `attempt` calls `progressed` when it gets somewhere (a commit, a confirmed
 * publish): the delay and the count start over, and a retry warning is followed by its
 * recovery line; returning is progress too.
 */
export async function runRetrying(
  loop: RetryLoop,
  attempt: (progressed: () => void) => Promise<void>,
): Promise<void> {
  const { policy, warning, signal } = loop;
  let delay = policy.retryDelayMs;
  let inARow = 0;
  const progressed = (): void => {
    delay = policy.retryDelayMs;
    inARow = 0;
    warning.progressed();
  };
  for (;;) {
    if (signal.aborted) return;
    try {
      await attempt(progressed);
      // TypeScript keeps the loop top's narrowing; the awaits above may have aborted it.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      if (!signal.aborted) warning.progressed();
      return;
    } catch (error) {
      // Stopping: what failed is read again on the next start.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      if (signal.aborted) return;
      if (!loop.retriable(error)) throw error;
      inARow++;
      if (inARow > policy.maxRetries) throw loop.exhausted(error);
      loop.retrying(error, delay);
      warning.retrying(error, delay);
      await sleep(delay, signal);
      delay = Math.min(delay * 2, policy.maxRetryDelayMs);
    }
  }
}
