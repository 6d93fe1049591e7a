/**
 * Event-time windows (watermark-driven, per key, several open at once) as the window operator
 * reads their configuration. Four questions, four places, as in Flink:
 * - which windows an element belongs to: `assignment` (an AlignedAssigner for tumbling and
 *   hopping windows, the gap for merging sessions, none for count windows);
 * - when a window fires: `closesAt` (the watermark passing end + grace; count windows at their
 *   n-th element);
 * - what is computed: the job's Aggregator;
 * - where state lives: KeyedWindows (src/windows/keyed-windows.ts).
 */
export interface EventTimeWindowSpec {
  /** Short name used in result metadata: 'tumbling', 'hopping', 'session' or 'count'. */
  readonly kind: string;
  /** Human-readable settings, e.g. "tumbling(1m, grace=30s)". */
  describe(): string;
  readonly assignment: WindowAssignment;
}

/** How elements are assigned to windows, and the closing rule that goes with it. */
export type WindowAssignment =
  | {
      /** Fixed bounds from the event time alone (tumbling, hopping). */
      readonly type: 'aligned';
      /** Milliseconds after a window's end during which it still takes elements. */
      readonly grace: number;
      createAssigner(): AlignedAssigner;
    }
  | {
      /** Per-key sessions, merged when an element bridges two. */
      readonly type: 'merging';
      readonly gap: number;
      readonly grace: number;
    }
  | {
      /** Per-key count windows: closed by their n-th element, never by the watermark. */
      readonly type: 'count';
      readonly n: number;
    };

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
