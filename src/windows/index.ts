// The public surface of the window kinds. Everything not listed here (assigner classes,
// the parameter-naming factories used by compaction) is internal.

// Which window an element belongs to, and when a step fires: the runner's contracts.
export { Placement, type WindowAssigner } from './window-assigner.js';
export { TriggerResult, neverTrigger, type Trigger } from './trigger.js';
export type { WindowSpec } from './window-spec.js';

// Settings syntax shared by the factories.
export type { Duration } from './duration.js';
export type { WeekDay } from './calendar.js';

// The window kinds: validating factories and the spec types they return (types only, so
// that a spec can only be built through its factory's validation).
export { tumbling, type TumblingOptions } from './tumbling.js';
export type { TumblingSpec } from './tumbling.js';
export { count } from './count.js';
export type { CountSpec } from './count.js';
export { session } from './session.js';
export type { SessionSpec } from './session.js';
export { compaction, type CompactionOptions } from './compaction.js';
export type { CompactionSpec } from './compaction.js';
