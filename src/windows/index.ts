// The public surface of the window kinds. Everything not listed here (assigner classes,
// the parameter-naming factories used by compaction) is internal.

// Which window an element belongs to, and when a step fires: the runner's contracts.
export { Placement, type WindowAssigner } from './window-assigner.js';
export { TriggerResult, neverTrigger, type Trigger } from './trigger.js';
export type { WindowSpec } from './window-spec.js';

// Settings syntax shared by the factories.
export type { Duration, TumblingSize } from './duration.js';
export type { WeekDay } from './calendar.js';

// The window kinds: validating factories and the spec types they return (types only, so
// that a spec can only be built through its factory's validation).
export { tumbling, type TumblingOptions, type EventTimeTumblingOptions } from './tumbling.js';
export type { TumblingSpec } from './tumbling.js';
export { count, type CountOptions } from './count.js';
export type { CountSpec, KeyedCountSpec } from './count.js';
export { session, type SessionOptions } from './session.js';
export type { SessionSpec, KeyedSessionSpec } from './session.js';

// Event-time windows (a grace, or count per key): several open at once per key, closed by
// the watermark, recovered through the results' metadata.
export { hopping, type HoppingOptions } from './hopping.js';
export type { HoppingSpec } from './hopping.js';
export type { EventTimeTumblingSpec } from './event-time-tumbling.js';
export type {
  EventTimeWindowSpec,
  WatermarkWindowSpec,
  WindowAssignment,
  AlignedAssigner,
} from './event-time-spec.js';
export { compaction, type CompactionOptions } from './compaction.js';
export type { CompactionSpec } from './compaction.js';
