import { CompactionSpec } from './compaction.js';
import { CountSpec } from './count.js';
import { MAX_DURATION_MS } from './duration.js';
import { isEventTimeSpec, type EventTimeWindowSpec } from './event-time-spec.js';
import { EventTimeTumblingSpec } from './event-time-tumbling.js';
import { SessionSpec } from './session.js';
import { TumblingSpec } from './tumbling.js';
import type { WindowSpec } from './window-spec.js';

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
 * Which event times a job over `spec` takes: those whose windows are all representable (see
 * isRepresentable). The message reader refuses any other as an 'event-time' error, so that no
 * window of it ever reaches the state. Windows computed by arithmetic are checked one by one
 * only within MAX_DURATION_MS of the edge of Date's range (two comparisons elsewhere);
 * calendar windows always, as date-fns fails unevenly (in some zones for every time tens of
 * thousands of years away), but only once per window: a time inside the last window checked
 * is in that window. A step window of your own is given Date's range: its assigner may hold
 * state, so it is not probed, and its bounds are its own.
 */
export function eventTimeCheck(spec: WindowSpec | EventTimeWindowSpec): EventTimeCheck {
  const inDateRange = (time: number): boolean => time >= -MAX_EVENT_TIME && time <= MAX_EVENT_TIME;
  const windowsOf = windowsOfTime(spec);
  if (windowsOf === undefined) return inDateRange;
  const fits = allRepresentable(windowsOf);
  if (tumblingOf(spec)?.size.type !== 'calendar') {
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

/** The tumbling windows of a spec, if its windows are tumbling ones. */
function tumblingOf(spec: WindowSpec | EventTimeWindowSpec): TumblingSpec | undefined {
  if (spec instanceof TumblingSpec) return spec;
  if (spec instanceof EventTimeTumblingSpec) return spec.windows;
  if (spec instanceof CompactionSpec && spec.step instanceof TumblingSpec) return spec.step;
  return undefined;
}

/** Fills `starts`/`ends` with the windows of an element at `time` alone. */
type WindowsOf = (time: number, starts: number[], ends: number[]) => void;

function windowsOfTime(spec: WindowSpec | EventTimeWindowSpec): WindowsOf | undefined {
  if (isEventTimeSpec(spec)) {
    const { assignment } = spec;
    switch (assignment.type) {
      case 'aligned': {
        const assigner = assignment.createAssigner();
        return (time, starts, ends) => assigner.assign(time, starts, ends);
      }
      // An element's own session or count window: what it opens, or adds to one that holds
      // it, so a window of several elements is representable when each element's is.
      case 'merging':
        return stepWindowsOf(new SessionSpec(assignment.gap));
      case 'count':
        return stepWindowsOf(new CountSpec(assignment.n));
    }
  }
  const builtIn =
    spec instanceof TumblingSpec ||
    spec instanceof SessionSpec ||
    spec instanceof CountSpec ||
    spec instanceof CompactionSpec;
  return builtIn ? stepWindowsOf(spec) : undefined;
}

/** The window a step window opens for an element at `time` (its first element). */
function stepWindowsOf(spec: WindowSpec): WindowsOf {
  const assigner = spec.createAssigner();
  return (time, starts, ends) => {
    assigner.open(time);
    assigner.add(time);
    starts.push(assigner.start);
    ends.push(assigner.end);
  };
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
