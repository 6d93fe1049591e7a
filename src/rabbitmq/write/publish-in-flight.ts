/**
 * The publishes of one publisher that the broker has not answered yet: one promise per
 * publishing id, a bound on how many are open at once, and a deadline for each.
 *
 * rabbitmq-stream-js-client has none of this (no per-message promise, no in-flight limit,
 * no timeout), so the target keeps it here, fed by the confirm router
 * (../gaps/publish-confirms.ts).
 */
export class InFlight {
  private readonly pending = new Map<bigint, Pending>();
  private readonly slotWaiters: { readonly count: number; readonly resolve: () => void }[] = [];
  /** Slots taken with `slot()` whose publish is not open yet. */
  private reserved = 0;

  constructor(private readonly max: number) {}

  /**
   * Resolves when this caller holds `count` of the `max` slots (at most `max`). Callers are
   * served strictly in arrival order: slots freed later are reserved for the oldest waiter
   * before it wakes, so a newcomer can never slip past it. Publishes must leave in the order
   * they were made: a higher publishing id stored first would make the broker discard the
   * lower one.
   */
  async slot(count = 1): Promise<void> {
    if (this.slotWaiters.length === 0 && this.pending.size + this.reserved + count <= this.max) {
      this.reserved += count;
      return;
    }
    await new Promise<void>((resolve) => this.slotWaiters.push({ count, resolve }));
  }

  /**
   * Opens the publish of `id` in the slot taken with `slot()`. The promise settles with
   * `confirm`/`fail`, or with `onTimeout()` after `timeoutMs`; `onTimeout` runs once the
   * publish is closed, so it may fail the others (as dropping the connection does).
   */
  open(id: bigint, timeoutMs: number, onTimeout: () => Error): Promise<void> {
    this.reserved--;
    let entry: Pending | undefined;
    const settled = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.settle(id, onTimeout), timeoutMs);
      entry = { resolve, reject, timer };
    });
    if (entry !== undefined) this.pending.set(id, { ...entry, settled });
    return settled;
  }

  /** Gives back `count` slots taken with `slot()` that were never opened. */
  release(count = 1): void {
    this.reserved -= count;
    this.wake();
  }

  /** Publishes opened and not settled yet. */
  get size(): number {
    return this.pending.size;
  }

  has(id: bigint): boolean {
    return this.pending.has(id);
  }

  confirm(id: bigint): void {
    this.settle(id, undefined);
  }

  fail(id: bigint, error: Error): void {
    this.settle(id, error);
  }

  /**
   * Fails the publish `open` returned `settled` for, if it is still open: not a later
   * publish of the same id opened since that one settled.
   */
  failOpened(id: bigint, settled: Promise<void>, error: Error): void {
    if (this.pending.get(id)?.settled === settled) this.settle(id, error);
  }

  failAll(error: (id: bigint) => Error): void {
    for (const id of [...this.pending.keys()]) this.settle(id, error(id));
  }

  private settle(id: bigint, error: Error | (() => Error) | undefined): void {
    const entry = this.pending.get(id);
    if (entry === undefined) return; // answered already, or timed out: a late answer is moot
    this.pending.delete(id);
    clearTimeout(entry.timer);
    if (error === undefined) entry.resolve();
    else entry.reject(typeof error === 'function' ? error() : error);
    this.wake();
  }

  /** Hands free slots to the oldest waiters that fit, reserving them before the waiters run. */
  private wake(): void {
    for (;;) {
      const waiter = this.slotWaiters[0];
      if (waiter === undefined || this.pending.size + this.reserved + waiter.count > this.max) {
        return;
      }
      this.slotWaiters.shift();
      this.reserved += waiter.count;
      waiter.resolve();
    }
  }
}

interface Pending {
  resolve(): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  /** The promise `open` returned for it. */
  readonly settled?: Promise<void>;
}
