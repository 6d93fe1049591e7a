/** Waits `ms`, or less when `signal` aborts (then it resolves at once, never rejects). */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** Waits for `promise` (which never rejects) to settle, `ms` at most: what a `close()` gives a run under way. */
export async function settledWithin(
  promise: Promise<unknown> | undefined,
  ms: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * Resolves at the next turn of the event loop, after its I/O (`setImmediate`): what a loop
 * that takes its input from promises alone awaits so that timers, sockets and confirms run.
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
