import { CompactionSpec } from './compaction.js';
import { CountSpec } from './count.js';
import { isEventTimeSpec, type EventTimeWindowSpec } from './event-time-spec.js';
import { SessionSpec } from './session.js';
import { TumblingSpec } from './tumbling.js';
import type { WindowSpec } from './window-spec.js';

/** Date's range, epoch ms: every event time and every window bound lies within ±this. */
export const MAX_EVENT_TIME = 8.64e15;

/** The event times a job takes, both included: those whose every window is representable. */
export interface EventTimeRange {
  readonly min: number;
  readonly max: number;
}

const DATE_RANGE: EventTimeRange = { min: -MAX_EVENT_TIME, max: MAX_EVENT_TIME };

/**
 * The one rule for window bounds: a window [start, end) can be held in window state (and in
 * a result) when both bounds are finite and within Date's range. NaN (what date-fns gives
 * for a week or month past that range) fails every comparison, so it is refused too.
 */
export function isRepresentable(start: number, end: number): boolean {
  return start >= -MAX_EVENT_TIME && end <= MAX_EVENT_TIME && start < end;
}

const ranges = new WeakMap<object, EventTimeRange>();

/**
 * The event times whose windows under `spec` are all representable (see isRepresentable):
 * the message reader refuses any other as an 'event-time' error, so that no window of it
 * ever reaches the state. Computed once per spec. A step window of your own is given Date's
 * range: its assigner may hold state, so it is not probed, and its bounds are its own.
 */
export function eventTimeRange(spec: WindowSpec | EventTimeWindowSpec): EventTimeRange {
  let range = ranges.get(spec);
  if (range === undefined) {
    const windowsOf = windowsOfTime(spec);
    range = windowsOf === undefined ? DATE_RANGE : representableTimes(windowsOf);
    ranges.set(spec, range);
  }
  return range;
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
 * Window bounds never decrease as time grows, so the times whose windows are representable
 * are one interval, and it holds 0 (sizes, gaps and offsets are at most 1e14 ms): each end of
 * it is found by bisection over whole milliseconds, about 53 probes.
 */
function representableTimes(windowsOf: WindowsOf): EventTimeRange {
  const starts: number[] = [];
  const ends: number[] = [];
  const fits = (time: number): boolean => {
    starts.length = 0;
    ends.length = 0;
    try {
      windowsOf(time, starts, ends);
    } catch {
      return false; // a calendar past Date's range may throw rather than give NaN
    }
    if (starts.length === 0) return false;
    for (let i = 0; i < starts.length; i++) {
      if (!isRepresentable(starts[i] as number, ends[i] as number)) return false;
    }
    return true;
  };
  return { min: edge(fits, -MAX_EVENT_TIME, 0), max: edge(fits, MAX_EVENT_TIME, 0) };
}

/** The time nearest `outer` (towards `inner`, which fits) that fits. */
function edge(fits: (time: number) => boolean, outer: number, inner: number): number {
  if (fits(outer)) return outer;
  // Invariant: `outer` does not fit, `inner` does.
  while (Math.abs(inner - outer) > 1) {
    const middle = Math.floor((outer + inner) / 2);
    if (fits(middle)) inner = middle;
    else outer = middle;
  }
  return inner;
}
