import { MAX_DURATION_MS } from './duration.js';
import type { WindowsOf } from './event-time-kind.js';
import { windowsOfAssignment } from './event-time-kinds.js';
import type { EventTimeWindowSpec } from './event-time-spec.js';
import { probeOf, type WindowProbe } from './window-probe.js';

/** Date's range, epoch ms: every event time and every window bound lies within ±this. */
export const MAX_EVENT_TIME = 8.64e15;

/** Whether a job takes an event time: whether every window of it is representable. */
export type EventTimeCheck = (time: number) => boolean;

/**
 * The one rule for window bounds: a window [start, end) can be held in window state (and in
 * a result) when both bounds are finite and within Date's range. NaN (what date-fns gives
 * for a week or month past that range) fails every comparison, so it is refused too.
 */
export function isRepresentable(start: number, end: number): boolean {
  return start >= -MAX_EVENT_TIME && end <= MAX_EVENT_TIME && start < end;
}

/**
 * How far a window of a fixed size, a hopping window, a session or a count window reaches
 * from its element's time: a size, gap or offset is at most MAX_DURATION_MS.
 */
const SURELY_HELD = MAX_EVENT_TIME - MAX_DURATION_MS;

/**
 * Which event times a job takes, its windows given by `probe`: those whose windows are all
 * representable (see isRepresentable). The message reader refuses any other as an 'event-time' error, so that no
 * window of it ever reaches the state. Windows computed by arithmetic are checked one by one
 * only within MAX_DURATION_MS of the edge of Date's range (two comparisons elsewhere);
 * calendar windows always, as date-fns fails unevenly (in some zones for every time tens of
 * thousands of years away), but only once per window: a time inside the last window checked
 * is in that window. A step window of your own is given Date's range (no probe): its assigner
 * may hold state, so it is not probed, and its bounds are its own.
 */
export function eventTimeCheck(probe: WindowProbe | undefined): EventTimeCheck {
  const inDateRange = (time: number): boolean => time >= -MAX_EVENT_TIME && time <= MAX_EVENT_TIME;
  if (probe === undefined) return inDateRange;
  const fits = allRepresentable(probe.windowsOf);
  if (!probe.calendar) {
    return (time) =>
      (time >= -SURELY_HELD && time <= SURELY_HELD) || (inDateRange(time) && fits(time));
  }
  // Tumbling windows partition time: the window that held one time holds every time in it.
  let start = Number.NaN;
  let end = Number.NaN;
  return (time) => {
    if (time >= start && time < end) return true;
    if (!inDateRange(time) || !fits(time)) return false;
    [start, end] = fits.last;
    return true;
  };
}

/**
 * How an event-time spec's windows are probed: calendar ones say; any other (yours too) is
 * probed as its assignment's kind places a lone element.
 */
export function eventTimeProbe(spec: EventTimeWindowSpec): WindowProbe {
  return probeOf(spec) ?? { windowsOf: windowsOfAssignment(spec.assignment), calendar: false };
}

/**
 * Whether every window `windowsOf` gives for a time is representable; `last` is the first
 * window of the last time asked.
 */
function allRepresentable(
  windowsOf: WindowsOf,
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
      if (!isRepresentable(starts[i] as number, ends[i] as number)) return false;
    }
    return true;
  };
  return Object.assign(fits, { last });
}
