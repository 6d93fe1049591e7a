/**
 * Readers waiting for something to change in the embedded broker (an append, an activation):
 * each waits until the next `wakeAll()` or until its own signal aborts, and leaves no listener
 * behind either way.
 */
export class Wakeups {
  private readonly waiters = new Set<() => void>();

  /** Resolves on the next `wakeAll()`, or when `signal` (if any) aborts: at once if it has. */
  next(signal?: AbortSignal): Promise<void> {
    // An aborted signal fires no more 'abort': a reader aborted while it let the event loop
    // turn would wait for a change that may never come.
    if (signal?.aborted === true) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = (): void => {
        this.waiters.delete(wake);
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      this.waiters.add(wake);
      signal?.addEventListener('abort', wake, { once: true });
    });
  }

  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
