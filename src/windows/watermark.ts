/**
 * An event-time watermark derived only from the messages (Flink's bounded out-of-orderness):
 * the latest event time seen, less the disorder the job allows. No wall clock is involved, so
 * a replay of the same messages moves it the same way, which exact recovery relies on.
 */
export class Watermark {
  /** The latest event time seen; -Infinity before the first message. */
  private maxEventTime = Number.NEGATIVE_INFINITY;

  constructor(
    /** Milliseconds an event may arrive after a later one without counting as disorder. */
    readonly maxOutOfOrderness: number,
  ) {}

  /** Event time up to which the job holds every message complete; -Infinity at the start. */
  get value(): number {
    return this.maxEventTime - this.maxOutOfOrderness;
  }

  /** Takes in the event time of one message (late ones too: they cannot move it back). */
  advance(eventTime: number): void {
    if (eventTime > this.maxEventTime) this.maxEventTime = eventTime;
  }

  /** Sets the watermark a result recorded, as a run restarting from that result does. */
  restore(value: number): void {
    this.maxEventTime = value + this.maxOutOfOrderness;
  }
}
