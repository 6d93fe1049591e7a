/**
 * Writes made during one turn of the event loop, handed over together at its end
 * (`setImmediate`: after the turn's I/O callbacks and the promise continuations they chain).
 *
 * A job catching up processes every chunk the turn's socket reads brought before the turn
 * ends, so the results of several chunks leave in one socket write (./write/target.ts), and
 * the credit for the chunks taken in one Credit frame (./gaps/grant-credit.ts): the broker
 * wakes once for them; a job that waits for its source has each write made before it waits.
 * Nothing waits on a clock: a write is held only while the turn runs on, and the turn always
 * ends.
 * (`process.nextTick` would be too early: it runs after each socket read's callback, and a
 * read hands over one chunk.)
 */
export class TurnWrites<W> {
  private queued: W[] = [];
  private scheduled = false;

  constructor(private readonly writeAll: (writes: readonly W[]) => void) {}

  add(write: W): void {
    this.queued.push(write);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.turnEnded);
  }

  /** Hands over what this turn queued so far, now; the turn's end hands over what comes after. */
  flush(): void {
    const writes = this.queued;
    if (writes.length === 0) return;
    this.queued = [];
    this.writeAll(writes);
  }

  private readonly turnEnded = (): void => {
    this.scheduled = false;
    this.flush();
  };
}
