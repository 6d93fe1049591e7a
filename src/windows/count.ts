import { ConfigError } from '../common/errors.js';
import type { EventTimeWindowSpec } from './event-time-spec.js';
import type { CountAssignment } from './per-key-counts.js';
import { TriggerResult, type Trigger } from './trigger.js';
import { Placement, type WindowAssigner } from './window-assigner.js';
import { probeWindows, stepWindowsOf, type Probed, type WindowProbe } from './window-probe.js';
import type { WindowSpec } from './window-spec.js';

/** A validated count window configuration; build it with `count()`. */
export class CountSpec implements WindowSpec, Probed {
  readonly kind = 'count';
  // Every element is Inside the global window, so nothing is ever late.
  readonly hasEventTimeBounds = false;

  constructor(readonly n: number) {}

  describe(): string {
    return `${this.kind}(${this.describeSettings()})`;
  }

  /** The settings part of describe(), shared with compaction's description. */
  describeSettings(): string {
    return String(this.n);
  }

  createAssigner(): WindowAssigner {
    return new GlobalWindowAssigner();
  }

  createTrigger(): Trigger {
    return new CountTrigger(this.n);
  }

  [probeWindows](): WindowProbe {
    return { windowsOf: stepWindowsOf(this), calendar: false };
  }
}

/** The options of `count(n, options)`: one count per key or one for all keys. */
export interface CountOptions {
  /**
   * true: each key has its own count window, closed at the key's n-th element (Flink's
   * keyed count window). Default false: a step of n elements of any keys.
   */
  readonly perKey?: boolean;
}

/** Per-key count windows: `count(n, { perKey: true })`. */
export class KeyedCountSpec implements EventTimeWindowSpec {
  readonly kind = 'count';
  readonly assignment: CountAssignment;

  constructor(readonly n: number) {
    this.assignment = { type: 'count', n };
  }

  describe(): string {
    return `${this.kind}(${this.n}, perKey)`;
  }
}

/**
 * Count windows, whatever the event times. The reported window bounds are [earliest,
 * latest + 1) of the window's event times, so they are exact, end-exclusive like every other
 * window, and non-empty even for one element.
 *
 * By default a step window: a step ends after its n-th element, of any keys. With
 * `{ perKey: true }`, one window per key, closed at that key's n-th element; the windows of
 * different keys overlap in offsets, so they are recovered through the results' metadata.
 */
export function count(n: number, options: CountOptions & { readonly perKey: true }): KeyedCountSpec;
export function count(n: number, options?: CountOptions): CountSpec;
export function count(n: number, options?: CountOptions): CountSpec | KeyedCountSpec;
export function count(n: number, options: CountOptions = {}): CountSpec | KeyedCountSpec {
  const spec = countSpec(n, 'count n');
  const { perKey = false } = options;
  if (typeof perKey !== 'boolean')
    throw new ConfigError('count perKey', 'must be a boolean', perKey);
  return perKey ? new KeyedCountSpec(spec.n) : spec;
}

/** The validating factory behind `count()`, with the parameter name its errors use. */
export function countSpec(n: number, parameter: string): CountSpec {
  if (typeof n !== 'number') throw new ConfigError(parameter, 'must be a number', n);
  if (!Number.isInteger(n)) throw new ConfigError(parameter, 'must be a whole number', n);
  if (n <= 0) throw new ConfigError(parameter, 'must be > 0', n);
  if (!Number.isSafeInteger(n)) {
    throw new ConfigError(parameter, `must be at most ${Number.MAX_SAFE_INTEGER}`, n);
  }
  return new CountSpec(n);
}

/** Flink's global window: one window holds everything; only the trigger ends a step. */
class GlobalWindowAssigner implements WindowAssigner {
  start = Number.NaN;
  end = Number.NaN;

  open(eventTime: number): void {
    this.start = eventTime;
    this.end = eventTime + 1;
  }

  place(): Placement {
    return Placement.Inside;
  }

  // Elements may arrive out of order, so the bounds track both extremes.
  add(eventTime: number): void {
    if (eventTime < this.start) this.start = eventTime;
    if (eventTime + 1 > this.end) this.end = eventTime + 1;
  }

  snapshot(): { start: number; end: number } {
    return { start: this.start, end: this.end };
  }
}

/** Fires (and purges) at the n-th element since the last clear(). */
class CountTrigger implements Trigger {
  private elements = 0;

  constructor(private readonly n: number) {}

  onElement(): TriggerResult {
    this.elements++;
    return this.elements >= this.n ? TriggerResult.FireAndPurge : TriggerResult.Continue;
  }

  clear(): void {
    this.elements = 0;
  }
}
