import { formatDuration, parseDuration, type Duration } from './duration.js';
import type { EventTimeWindowSpec } from './event-time-spec.js';
import { parseGrace } from './grace.js';
import type { MergingAssignment } from './merging-sessions.js';
import { neverTrigger, type Trigger } from './trigger.js';
import { Placement, type WindowAssigner } from './window-assigner.js';
import { probeWindows, stepWindowsOf, type Probed, type WindowProbe } from './window-probe.js';
import type { WindowSpec } from './window-spec.js';

/** A validated session window configuration; build it with `session()`. */
export class SessionSpec implements WindowSpec, Probed {
  readonly kind = 'session';
  readonly hasEventTimeBounds = true;

  constructor(/** Milliseconds of event-time silence that end a session. */ readonly gap: number) {}

  describe(): string {
    return `${this.kind}(${this.describeSettings()})`;
  }

  /** The settings part of describe(), shared with compaction's description. */
  describeSettings(): string {
    return formatDuration(this.gap);
  }

  createAssigner(): WindowAssigner {
    return new SessionAssigner(this.gap);
  }

  createTrigger(): Trigger {
    return neverTrigger;
  }

  [probeWindows](): WindowProbe {
    return { windowsOf: stepWindowsOf(this), calendar: false };
  }
}

/** The options of `session(gap, options)`: the grace that makes sessions event-time windows. */
export interface SessionOptions {
  /**
   * How long after its end a session still takes late elements (no default: 0 for none).
   * With a grace the sessions are EVENT-TIME windows, one set per key: see `session`.
   */
  readonly grace: Duration;
}

/** Per-key sessions closed by the watermark: `session(gap, { grace })`. */
export class KeyedSessionSpec implements EventTimeWindowSpec {
  readonly kind = 'session';
  readonly assignment: MergingAssignment;

  constructor(
    readonly gap: number,
    readonly grace: number,
  ) {
    this.assignment = { type: 'merging', gap, grace };
  }

  describe(): string {
    return `${this.kind}(${formatDuration(this.gap)}, grace=${formatDuration(this.grace)})`;
  }
}

/**
 * Session windows. An element's own session is [t, t + gap); sessions that overlap or touch
 * are one, [earliest, latest + gap), as in Flink, so an element exactly `gap` after the latest
 * (or before the earliest) still joins.
 *
 * Without `grace`, a step window (one burst of activity per step, all keys together): a step
 * ends before an element more than `gap` after the latest event time of the session, and
 * elements more than `gap` before the earliest are late.
 *
 * With `grace`, per-key event-time sessions (Kafka Streams' session windows, Flink's merging
 * session assigner): each key has its own sessions, several may be open, an element that
 * bridges two merges them (the aggregate's `merge` combines their accumulators), and a session
 * closes when the watermark passes its end + grace.
 */
export function session(gap: Duration, options: SessionOptions): KeyedSessionSpec;
export function session(gap: Duration): SessionSpec;
export function session(gap: Duration, options?: SessionOptions): SessionSpec | KeyedSessionSpec;
export function session(gap: Duration, options?: SessionOptions): SessionSpec | KeyedSessionSpec {
  const spec = sessionSpec(gap, 'session gap');
  if (options === undefined) return spec;
  return new KeyedSessionSpec(spec.gap, parseGrace('session grace', options.grace));
}

/** The validating factory behind `session()`, with the parameter name its errors use. */
export function sessionSpec(gap: Duration, parameter: string): SessionSpec {
  return new SessionSpec(parseDuration(parameter, gap));
}

class SessionAssigner implements WindowAssigner {
  start = Number.NaN;
  end = Number.NaN;
  private latest = Number.NaN;

  constructor(private readonly gap: number) {}

  open(eventTime: number): void {
    this.start = eventTime;
    this.latest = eventTime;
    this.end = eventTime + this.gap;
  }

  place(eventTime: number): Placement {
    if (eventTime - this.latest > this.gap) return Placement.Later;
    if (this.start - eventTime > this.gap) return Placement.Late;
    return Placement.Inside;
  }

  add(eventTime: number): void {
    if (eventTime < this.start) this.start = eventTime;
    if (eventTime > this.latest) {
      this.latest = eventTime;
      this.end = eventTime + this.gap;
    }
  }

  snapshot(): { start: number; end: number } {
    return { start: this.start, end: this.end };
  }

  // A session's end is its latest element + gap, so the bounds give back its whole state.
  reopen(start: number, end: number): void {
    this.start = start;
    this.end = end;
    this.latest = end - this.gap;
  }
}
