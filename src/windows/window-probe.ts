import type { WindowsOf } from './event-time-kind.js';
import type { WindowSpec } from './window-spec.js';

/**
 * How the event-time range check (./event-time-range.ts) probes a built-in kind's windows. A
 * step window of your own has none: its assigner may hold state, so it is not probed.
 */
export interface WindowProbe {
  /** The windows of an element at a time alone. */
  readonly windowsOf: WindowsOf;
  /**
   * Calendar windows (date-fns), which fail unevenly: probed at every time rather than near the
   * edge of Date's range only, but once per window, as they partition time.
   */
  readonly calendar: boolean;
}

/** The key of a built-in spec's probe: not exported from the package, so no spec of yours has it. */
export const probeWindows = Symbol('probeWindows');

/** A spec that says how its windows are probed. */
export interface Probed {
  [probeWindows](): WindowProbe;
}

/** Whether a spec says how its windows are probed. */
export function isProbed(spec: object): spec is Probed {
  return probeWindows in spec;
}

/** How a spec's windows are probed, if it says (a built-in one). */
export function probeOf(spec: object): WindowProbe | undefined {
  return isProbed(spec) ? spec[probeWindows]() : undefined;
}

/** The window a step window opens for an element at `time` (its first element). */
export function stepWindowsOf(spec: WindowSpec): WindowsOf {
  const assigner = spec.createAssigner();
  return (time, starts, ends) => {
    assigner.open(time);
    assigner.add(time);
    starts.push(assigner.start);
    ends.push(assigner.end);
  };
}
