import type { Target } from '../ports/ports.js';

/**
 * Pipelines publishes to a target without reordering: up to `maxInFlight` writes await
 * their confirms at once, in the order they were issued. The first failure is kept and
 * rethrown by the next `publish` or by `drain`, so no later result is issued after a
 * failed one has been noticed (a later id stored past a lost earlier one would make the
 * broker discard the earlier one on retry).
 */
export class OrderedPublisher {
  private readonly inFlight: Promise<void>[] = [];
  private failure: { error: unknown } | undefined;
  private awaiting = 0;
  /** Those waiting in `unlessFailed`: woken, and forgotten, by the first failure. */
  private readonly failureWaiters = new Set<() => void>();
  /** Every write's rejection handler, bound once: it needs nothing of the write. */
  private readonly failed = (error: unknown): void => {
    this.awaiting--;
    this.failure ??= { error };
    for (const wake of this.failureWaiters) wake();
    this.failureWaiters.clear();
  };

  constructor(
    private readonly target: Target,
    private readonly maxInFlight: number,
  ) {}

  /** Issues the write (routed by `routingKey` on a super stream); `confirmed` runs on its confirm. */
  async publish(
    publishingId: bigint,
    messages: readonly Uint8Array[],
    confirmed: () => void,
    routingKey?: string,
  ): Promise<void> {
    this.throwIfFailed();
    while (this.inFlight.length >= this.maxInFlight) {
      await this.inFlight.shift();
      this.throwIfFailed();
    }
    // The handlers are attached at once so a rejection is never unhandled while it waits its
    // turn, and is noticed in the same tick as before a confirm callback existed.
    this.awaiting++;
    this.inFlight.push(
      this.target.publish(publishingId, messages, routingKey).then(() => {
        this.awaiting--;
        confirmed();
      }, this.failed),
    );
  }

  /**
   * Races `work` against a failed write: resolves with `work`'s result, or with undefined once
   * a write fails (at once if one has). A loop waiting for its next chunk must learn of a
   * failure then, not when the next result or a drain comes, which on a quiet source is never.
   * The wait is a fresh promise, forgotten once the race settles: racing one long-lived
   * promise instead would keep every race's result (each chunk) reachable from it.
   */
  async unlessFailed<T>(work: Promise<T>): Promise<T | undefined> {
    if (this.failure !== undefined) {
      work.catch(() => undefined); // not awaited: its failure must not go unhandled
      return undefined;
    }
    let wake = (): void => undefined;
    const failed = new Promise<undefined>((resolve) => (wake = () => resolve(undefined)));
    this.failureWaiters.add(wake);
    try {
      return await Promise.race([work, failed]);
    } finally {
      this.failureWaiters.delete(wake);
    }
  }

  /** No write under way and none failed: nothing to learn before the next chunk. */
  get idle(): boolean {
    return this.awaiting === 0 && this.failure === undefined;
  }

  /** Writes issued and neither confirmed nor failed yet. */
  get unconfirmed(): number {
    return this.awaiting;
  }

  /** Waits for every write in flight; throws the first failure, if any. */
  async drain(): Promise<void> {
    while (this.inFlight.length > 0) await this.inFlight.shift();
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}
