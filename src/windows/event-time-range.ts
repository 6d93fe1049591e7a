import { MAX_DURATION_MS } from './duration.js';
import type { WindowsOf } from './event-time-kind.js';
import { graceOf, windowsOfAssignment } from './event-time-kinds.js';
import type { EventTimeWindowSpec } from './event-time-spec.js';
import { probeOf, type WindowProbe } from './window-probe.js';

/** Date's range, epoch ms: every event time and every window bound lies within ±this. */
export const MAX_EVENT_TIME = 8.64e15;

/** Whether a job takes an event time: whether every window of it is representable. */
export type EventTimeCheck = (time: number) => boolean;

/** Which event times a job takes, and the rule, in words, that refuses the others. */
export interface EventTimeRange {
  readonly takes: EventTimeCheck;
  readonly rule: string;
}

/**
 * The one rule for window bounds: a window [start, end) can be held in window state (and in
 * a result) when both bounds are within Date's range and, for a window the watermark closes
 * (`closedAfter`: its grace + the job's maxOutOfOrderness), when end + closedAfter is below
 * MAX_EVENT_TIME. The watermark trails the latest event time by maxOutOfOrderness and closes
 * a window once it reaches end + grace; no event time a time window takes reaches
 * MAX_EVENT_TIME (a window holding it would end past it), so a window ending later could
 * never close: its values, and every value late for it, would be held for ever. NaN (what
 * date-fns gives for a week or month past that range) fails every comparison, so it is
 * refused too.
 */
export function isRepresentable(start: number, end: number, closedAfter?: number): boolean {
  if (!(start >= -MAX_EVENT_TIME && start < end)) return false;
  return closedAfter === undefined ? end <= MAX_EVENT_TIME : end + closedAfter < MAX_EVENT_TIME;
}

/**
 * How far a window of a fixed size, a hopping window, a session or a count window reaches
 * from its element's time: a size, gap or offset is at most MAX_DURATION_MS.
 */
const REACH = MAX_DURATION_MS;

/** The event times a step window takes (`spec` is a step window's): see eventTimeRange. */
export function stepWindowRange(spec: object): EventTimeRange {
  return eventTimeRange(probeOf(spec), undefined);
}

/**
 * The event times an event-time job takes: its windows probed as calendar ones say, any
 * other (yours too) as its assignment's kind places a lone element; a window its kind closes
 * by the watermark must be closable (see isRepresentable).
 */
export function eventTimeWindowRange(
  spec: EventTimeWindowSpec,
  maxOutOfOrderness: number,
): EventTimeRange {
  const probe = probeOf(spec) ?? {
    windowsOf: windowsOfAssignment(spec.assignment),
    calendar: false,
  };
  const grace = graceOf(spec.assignment);
  return eventTimeRange(probe, grace === undefined ? undefined : grace + maxOutOfOrderness);
}

/**
 * Which event times a job takes, its windows given by `probe`: those whose windows are all
 * representable (see isRepresentable). The message reader refuses any other as an
 * 'event-time' error, so that no window of it ever reaches the state. Windows computed by
 * arithmetic are checked one by one only within REACH (and `closedAfter`) of the edge of
 * Date's range (two comparisons elsewhere); calendar windows always, as date-fns fails
 * unevenly (in some zones for every time tens of thousands of years away), but only once per
 * window: a time inside the last window checked is in that window. A step window of your own
 * is given Date's range (no probe): its assigner may hold state, so it is not probed, and its
 * bounds are its own.
 */
function eventTimeRange(
  probe: WindowProbe | undefined,
  closedAfter: number | undefined,
): EventTimeRange {
  const inDateRange = (time: number): boolean => time >= -MAX_EVENT_TIME && time <= MAX_EVENT_TIME;
  const rule = ruleOf(probe === undefined ? undefined : closedAfter);
  if (probe === undefined) return { takes: inDateRange, rule };
  const fits = allRepresentable(probe.windowsOf, closedAfter);
  if (!probe.calendar) {
    const surelyHeld = MAX_EVENT_TIME - REACH - (closedAfter ?? 0) - 1;
    return {
      takes: (time) =>
        (time >= -surelyHeld && time <= surelyHeld) || (inDateRange(time) && fits(time)),
      rule,
    };
  }
  // Tumbling windows partition time: the window that held one time holds every time in it.
  let start = Number.NaN;
  let end = Number.NaN;
  const takes = (time: number): boolean => {
    if (time >= start && time < end) return true;
    if (!inDateRange(time) || !fits(time)) return false;
    [start, end] = fits.last;
    return true;
  };
  return { takes, rule };
}

/** The rule an event time was refused by, in words: what follows "that" in its error. */
function ruleOf(closedAfter: number | undefined): string {
  const range = `every window must lie within ±${MAX_EVENT_TIME} ms (the range of Date)`;
  if (closedAfter === undefined) return `cannot be represented: ${range}`;
  return (
    `cannot be represented or closed: ${range}, and end before ${MAX_EVENT_TIME} − grace − ` +
    `maxOutOfOrderness = ${MAX_EVENT_TIME - closedAfter}, so that the watermark can pass it`
  );
}

/**
 * Whether every window `windowsOf` gives for a time is representable (closable, with
 * `closedAfter`); `last` is the first
 * window of the last time asked.
 */
function allRepresentable(
  windowsOf: WindowsOf,
  closedAfter: number | undefined,
): EventTimeCheck & { readonly last: readonly [number, number] } {
  const starts: number[] = [];
  const ends: number[] = [];
  const last: [number, number] = [Number.NaN, Number.NaN];
  const fits = (time: number): boolean => {
    starts.length = 0;
    ends.length = 0;
    try {
      windowsOf(time, starts, ends);
    } catch {
      return false; // a calendar past Date's range may throw rather than give NaN
    }
    if (starts.length === 0) return false;
    last[0] = starts[0] as number;
    last[1] = ends[0] as number;
    for (let i = 0; i < starts.length; i++) {
      if (!isRepresentable(starts[i] as number, ends[i] as number, closedAfter)) return false;
    }
    return true;
  };
  return Object.assign(fits, { last });
}
