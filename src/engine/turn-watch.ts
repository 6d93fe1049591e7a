/**
 * How long a loop may hold the event loop before it lets it turn. A job catching up takes
 * chunk after chunk from its source's queue without waiting, and its writes (made to leave
 * together at the turn's end) and the confirms that came meanwhile wait until the turn ends:
 * on RabbitMQ's large chunks (16,000 messages, ~20 ms of work each) several chunks later.
 * A turn costs a catch-up one socket write of what it published (~0.1 ms) every 10 ms at
 * most; a result waits for its own slice of messages and 10 ms of others.
 */
export const TURN_MS = 10;

/** Whether the event loop turned within the last `TURN_MS` while a loop was busy. */
export class TurnWatch {
  /** When the event loop last turned, as far as this watch knows. */
  private turnedAt = 0;
  /** A turn's end is awaited: `turnedAt` is then the last one seen. */
  private watching = false;
  private readonly turned = (): void => {
    this.turnedAt = performance.now();
    this.watching = false;
  };

  /**
   * Busy from now (before a chunk is processed): a watch not watching has seen its last turn
   * end, and may have missed later ones, so it counts from now.
   */
  busy(): void {
    if (this.watching) return;
    this.watching = true;
    this.turnedAt = performance.now();
    setImmediate(this.turned);
  }

  /** Whether the event loop went `TURN_MS` without turning since `busy()`. */
  get held(): boolean {
    return performance.now() - this.turnedAt >= TURN_MS;
  }
}
