import { formatDuration, parseDuration, type Duration } from './duration.js';
import { neverTrigger, type Trigger } from './trigger.js';
import { Placement, type WindowAssigner } from './window-assigner.js';
import type { WindowSpec } from './window-spec.js';

/** A validated session window configuration; build it with `session()`. */
export class SessionSpec implements WindowSpec {
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
}

/**
 * Session windows (one burst of activity per step): a step ends before an element whose
 * event time is more than `gap` after the latest event time of the session, measured
 * from the latest rather than the previous element, so an out-of-order element cannot
 * split a session. The window is [earliest, latest + gap), as in Flink; an element
 * exactly `gap` after the latest (or before the earliest) still joins, since its own
 * session [t, t + gap) touches this one. Elements more than `gap` before the earliest
 * are late.
 */
export function session(gap: Duration): SessionSpec {
  return sessionSpec(gap, 'session gap');
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
}
