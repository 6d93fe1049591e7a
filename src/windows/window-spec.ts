import type { WindowAssigner } from './window-assigner.js';
import type { Trigger } from './trigger.js';

/**
 * A validated window configuration (Bytewax's config object): immutable, built by a
 * factory that rejects bad settings with a ConfigError, and able to build fresh logic
 * objects for each run of a job.
 */
export interface WindowSpec {
  /** Short name used in result metadata, e.g. 'tumbling', 'count', 'session'. */
  readonly kind: string;
  /** Human-readable settings, e.g. "tumbling(1m, tz=Europe/Paris)". */
  describe(): string;
  /** Whether elements can be late (false for count windows, which have no event-time bound). */
  readonly hasEventTimeBounds: boolean;
  /** A fresh assigner for one job run: where each element's step begins and ends. */
  createAssigner(): WindowAssigner;
  /** A fresh trigger for one job run: whether a step fires before a later window starts. */
  createTrigger(): Trigger;
}
