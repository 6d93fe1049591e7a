import type { WindowAssignment } from './event-time-kinds.js';

export type { WindowAssignment };

/**
 * Event-time windows (watermark-driven, per key, several open at once) as the window operator
 * reads their configuration. Three questions, three places, as in Flink:
 * - which windows an element belongs to, and when a window fires: the kind `assignment` names
 *   (./event-time-kinds.ts: aligned for tumbling and hopping, merging for sessions, count);
 * - what is computed: the job's Aggregator;
 * - where state lives: KeyedWindows (src/windows/keyed-windows.ts).
 */
export interface EventTimeWindowSpec {
  /** Short name used in result metadata: 'tumbling', 'hopping', 'session' or 'count'. */
  readonly kind: string;
  /** Human-readable settings, e.g. "tumbling(1m, grace=30s)". */
  describe(): string;
  /** Which windows an element belongs to and when each fires: the kind's own rules. */
  readonly assignment: WindowAssignment;
}

/** Which aligned windows hold an event time: fills `starts`/`ends`, earliest window first. */
export interface AlignedAssigner {
  assign(eventTime: number, starts: number[], ends: number[]): void;
}

/** Whether a window with `end` is closed under `watermark` (the one trigger rule of time windows). */
export function isClosed(end: number, grace: number, watermark: number): boolean {
  return end + grace <= watermark;
}

/** Whether a window spec is an event-time one (the window operator's) rather than a step window. */
export function isEventTimeSpec(spec: object): spec is EventTimeWindowSpec {
  return 'assignment' in spec;
}

/**
 * An event-time window the watermark closes (tumbling, hopping, session with a grace), not a
 * count per key: what a job over several inputs takes, its merge ordering by event time.
 */
export type WatermarkWindowSpec = EventTimeWindowSpec & {
  readonly assignment: Exclude<WindowAssignment, { readonly type: 'count' }>;
};
