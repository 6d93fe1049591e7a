import { ConfigError } from '../common/errors.js';
import {
  CalendarTumblingAssigner,
  checkTimeZone,
  MAX_CALENDAR_OFFSET_MS,
  type WeekDay,
} from './calendar.js';
import {
  formatDuration,
  formatWindowSize,
  parseDuration,
  parseWindowSize,
  type Duration,
  type TumblingSize,
  type WindowSize,
} from './duration.js';
import { EventTimeTumblingSpec } from './event-time-tumbling.js';
import { parseGrace } from './grace.js';
import { neverTrigger, type Trigger } from './trigger.js';
import { FixedTumblingAssigner } from './tumbling-assigner.js';
import type { WindowAssigner } from './window-assigner.js';
import { probeWindows, stepWindowsOf, type Probed, type WindowProbe } from './window-probe.js';
import type { WindowSpec } from './window-spec.js';

/** The options of `tumbling(size, options)`: where windows start, in which time zone, on which week day. */
export interface TumblingOptions {
  /**
   * Shifts where windows start. Fixed sizes: from the epoch, 0 <= offset < size (a '1h'
   * window with offset '15m' runs from :15 to :15). Calendar sizes: the local time of
   * day at which each window starts, < 24h (a '1d' window with offset '6h' runs from
   * 06:00 to 06:00 local time).
   */
  readonly offset?: Duration;
  /** IANA time zone in which calendar sizes align; default 'UTC'. Calendar sizes only. */
  readonly timeZone?: string;
  /** First day of a '1w' window, 0 = Sunday … 6 = Saturday; default 1 (Monday). '1w' only. */
  readonly weekStartsOn?: WeekDay;
}

/** A validated tumbling window configuration; build it with `tumbling()`. */
export class TumblingSpec implements WindowSpec, Probed {
  readonly kind = 'tumbling';
  readonly hasEventTimeBounds = true;

  constructor(
    readonly size: WindowSize,
    /** Milliseconds: from the epoch (fixed sizes) or into the local day (calendar sizes). */
    readonly offset: number,
    readonly timeZone: string,
    readonly weekStartsOn: WeekDay,
  ) {}

  describe(): string {
    return `${this.kind}(${this.describeSettings()})`;
  }

  /** The settings part of describe(), shared with compaction's description. */
  describeSettings(): string {
    const settings = [formatWindowSize(this.size)];
    if (this.size.type === 'calendar') settings.push(`tz=${this.timeZone}`);
    if (this.size.type === 'calendar' && this.size.unit === 'week') {
      settings.push(`weekStartsOn=${this.weekStartsOn}`);
    }
    if (this.offset !== 0) settings.push(`offset=${formatDuration(this.offset)}`);
    return settings.join(', ');
  }

  createAssigner(): WindowAssigner {
    return this.size.type === 'fixed'
      ? new FixedTumblingAssigner(this.size.ms, this.offset)
      : new CalendarTumblingAssigner(this.size.unit, this.timeZone, this.weekStartsOn, this.offset);
  }

  createTrigger(): Trigger {
    return neverTrigger;
  }

  [probeWindows](): WindowProbe {
    return { windowsOf: stepWindowsOf(this), calendar: this.size.type === 'calendar' };
  }
}

/** The options of an event-time tumbling window: those of `tumbling` and its grace. */
export interface EventTimeTumblingOptions extends TumblingOptions {
  /**
   * How long after its end a window still takes late elements (no default: 0 for none). With
   * a grace the windows are EVENT-TIME windows: closed when the watermark passes end + grace,
   * several open at once, one per key, and recovered through the results' metadata.
   */
  readonly grace: Duration;
}

/**
 * Tumbling windows. Fixed sizes (`'250ms' '30s' '1m' '2h'`, or ms) align to the epoch in UTC;
 * calendar sizes (`'1d' '1w' '1mo'`, exactly one unit) align in `timeZone`.
 *
 * Without `grace`, a step window: the step ends before the first element whose event time
 * falls in a later window. With `grace`, an event-time window (see EventTimeTumblingOptions).
 */
export function tumbling(
  size: TumblingSize,
  options: EventTimeTumblingOptions,
): EventTimeTumblingSpec;
export function tumbling(size: TumblingSize, options?: TumblingOptions): TumblingSpec;
export function tumbling(
  size: TumblingSize,
  options?: TumblingOptions | EventTimeTumblingOptions,
): TumblingSpec | EventTimeTumblingSpec;
export function tumbling(
  size: TumblingSize,
  options: TumblingOptions & { readonly grace?: Duration } = {},
): TumblingSpec | EventTimeTumblingSpec {
  const { grace, ...alignment } = options;
  const windows = tumblingSpec(size, alignment, 'tumbling size', 'tumbling');
  if (!('grace' in options)) return windows;
  return new EventTimeTumblingSpec(windows, parseGrace('tumbling grace', grace));
}

/**
 * The validating factory behind `tumbling()`, with the parameter names its errors use,
 * so that compaction's errors name compaction's settings.
 */
export function tumblingSpec(
  size: TumblingSize,
  options: TumblingOptions,
  sizeParameter: string,
  optionPrefix: string,
): TumblingSpec {
  const windowSize = parseWindowSize(sizeParameter, size);
  const calendar = windowSize.type === 'calendar';
  const { offset = 0, timeZone, weekStartsOn } = options;

  const offsetParameter = `${optionPrefix} offset`;
  const offsetMs = parseDuration(offsetParameter, offset, 'non-negative');
  const offsetLimit = calendar ? MAX_CALENDAR_OFFSET_MS : windowSize.ms;
  if (offsetMs >= offsetLimit) {
    throw new ConfigError(
      offsetParameter,
      calendar
        ? 'must be less than 24h for calendar sizes (it is the local time of day at which each window starts)'
        : `must be less than the size (${formatDuration(offsetLimit)})`,
      offset,
    );
  }

  const zoneParameter = `${optionPrefix} timeZone`;
  // Rejected rather than ignored: a user who sets a zone on '1h' expects local alignment.
  if (!calendar && timeZone !== undefined) {
    throw new ConfigError(
      zoneParameter,
      "applies only to calendar sizes ('1d', '1w', '1mo'); fixed sizes align to the epoch in UTC, shift them with offset",
      timeZone,
    );
  }
  const zone = checkTimeZone(zoneParameter, timeZone ?? 'UTC');

  const weekParameter = `${optionPrefix} weekStartsOn`;
  if (weekStartsOn !== undefined && !(calendar && windowSize.unit === 'week')) {
    throw new ConfigError(weekParameter, "applies only to the size '1w'", weekStartsOn);
  }
  const firstDay = weekStartsOn ?? 1;
  if (!Number.isInteger(firstDay) || firstDay < 0 || firstDay > 6) {
    throw new ConfigError(
      weekParameter,
      'must be an integer from 0 (Sunday) to 6 (Saturday)',
      weekStartsOn,
    );
  }

  return new TumblingSpec(windowSize, offsetMs, zone, firstDay);
}
