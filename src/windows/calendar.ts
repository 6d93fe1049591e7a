import { tz, type TZDate } from '@date-fns/tz';
import { addDays, addMonths, addWeeks, startOfDay, startOfMonth, startOfWeek } from 'date-fns';
import { ConfigError } from '../common/errors.js';
import type { CalendarUnit } from './duration.js';
import { TumblingAssigner } from './tumbling-assigner.js';

/** First day of a calendar week: 0 = Sunday … 6 = Saturday (date-fns' convention). */
export type WeekDay = 0 | 1 | 2 | 3 | 4 | 5 | 6;

/** A calendar offset is a local time of day, so it must stay within one day. */
export const MAX_CALENDAR_OFFSET_MS = 24 * 3_600_000;

/**
 * Throws unless `timeZone` is an IANA zone the runtime knows. @date-fns/tz silently yields
 * Invalid Date for unknown zones, so the check must happen here, at configuration time.
 */
export function checkTimeZone(parameter: string, timeZone: unknown): string {
  if (typeof timeZone === 'string' && timeZone !== '') {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone });
      return timeZone;
    } catch {
      // fall through to the ConfigError below
    }
  }
  throw new ConfigError(parameter, "must be an IANA time zone such as 'Europe/Berlin'", timeZone);
}

/**
 * Calendar windows (a day, a week or a month) in an IANA time zone, via date-fns and
 * @date-fns/tz, so a day across a DST change is 23 or 25 hours long. `offset` is a local
 * wall-clock time of day (e.g. 6h: days run from 06:00 to 06:00 local time, whatever the
 * DST state). A start that falls into a DST gap moves forward as @date-fns/tz resolves it;
 * a window's end is computed exactly as the next window's start, so windows never overlap
 * or leave holes. Dates are allocated only in open(), once per step.
 */
export class CalendarTumblingAssigner extends TumblingAssigner {
  private readonly zone: ReturnType<typeof tz>;

  constructor(
    private readonly unit: CalendarUnit,
    timeZone: string,
    private readonly weekStartsOn: WeekDay,
    private readonly offset: number,
  ) {
    super();
    this.zone = tz(timeZone);
  }

  open(eventTime: number): void {
    let unitStart = this.startOfUnit(eventTime);
    let start = this.shift(unitStart);
    // The window that holds eventTime may begin in an earlier unit: with an offset (03:00
    // with days starting at 06:00 belongs to the previous day's window), or when a DST gap
    // moved this unit's start past eventTime. The previous unit is found from the instant
    // before this one, which is always earlier, whatever the zone's calendar does.
    while (start > eventTime) {
      const previous = this.startOfUnit(unitStart.getTime() - 1);
      // At the edge of Date's range date-fns may give the same unit back: no window, then.
      if (!(previous.getTime() < unitStart.getTime())) {
        this.openNone();
        return;
      }
      unitStart = previous;
      start = this.shift(unitStart);
    }
    let next = this.nextUnit(unitStart);
    let end = this.shift(next);
    // ...or in a later one, when a fall-back resolves the next start at or before eventTime.
    while (end <= eventTime) {
      unitStart = next;
      start = end;
      next = this.nextUnit(unitStart);
      end = this.shift(next);
      if (!(end > start)) {
        this.openNone(); // no later unit (the edge, as above)
        return;
      }
    }
    this.start = start;
    this.end = end;
  }

  /**
   * NaN bounds: what date-fns gives past Date's range, and what the event-time range (see
   * event-time-range.ts) refuses, so that no such time reaches a job's windows.
   */
  private openNone(): void {
    this.start = Number.NaN;
    this.end = Number.NaN;
  }

  /** Start of the unit after `unitStart`: strictly later, even across a skipped day. */
  private nextUnit(unitStart: TZDate): TZDate {
    let next = this.startOfUnit(this.addUnits(unitStart, 1));
    if (next.getTime() <= unitStart.getTime()) {
      next = this.startOfUnit(this.addUnits(unitStart, 2));
    }
    return next;
  }

  private startOfUnit(time: number | TZDate): TZDate {
    switch (this.unit) {
      case 'day':
        return startOfDay(time, { in: this.zone });
      case 'week':
        return startOfWeek(time, { in: this.zone, weekStartsOn: this.weekStartsOn });
      case 'month':
        return startOfMonth(time, { in: this.zone });
    }
  }

  private addUnits(date: TZDate, amount: number): TZDate {
    switch (this.unit) {
      case 'day':
        return addDays(date, amount, { in: this.zone });
      case 'week':
        return addWeeks(date, amount, { in: this.zone });
      case 'month':
        return addMonths(date, amount, { in: this.zone });
    }
  }

  /** Epoch ms of the local wall-clock time `offset` after the unit's start. */
  private shift(unitStart: TZDate): number {
    if (this.offset === 0) return unitStart.getTime();
    const shifted = this.zone(unitStart.getTime());
    // Setting the local time of day (not adding elapsed ms) keeps 06:00 at 06:00 on
    // 23- and 25-hour days.
    shifted.setHours(0, 0, 0, this.offset);
    return shifted.getTime();
  }
}
