import { ConfigError } from '../common/errors.js';
import { countSpec, type CountSpec } from './count.js';
import type { Duration, TumblingSize } from './duration.js';
import { sessionSpec, type SessionSpec } from './session.js';
import type { Trigger } from './trigger.js';
import { tumblingSpec, type TumblingOptions, type TumblingSpec } from './tumbling.js';
import type { WindowAssigner } from './window-assigner.js';
import { probeWindows, stepWindowsOf, type Probed, type WindowProbe } from './window-probe.js';
import type { WindowSpec } from './window-spec.js';

/**
 * When a change-stream compaction step ends: exactly one of
 * - `count`: after n updates (a count window);
 * - `every`: when an update's event time falls in a later tumbling window (with the
 *   tumbling options `offset`, `timeZone`, `weekStartsOn`);
 * - `gap`: when an update arrives more than `gap` after the latest one (a session).
 */
export type CompactionOptions =
  | { readonly count: number; readonly every?: never; readonly gap?: never }
  | ({
      readonly every: TumblingSize;
      readonly count?: never;
      readonly gap?: never;
    } & TumblingOptions)
  | { readonly gap: Duration; readonly count?: never; readonly every?: never };

/** A validated compaction step configuration; build it with `compaction()`. */
export class CompactionSpec implements WindowSpec, Probed {
  readonly kind = 'compact';

  constructor(
    /** The window kind that decides where steps end. */
    readonly step: CountSpec | TumblingSpec | SessionSpec,
  ) {}

  get hasEventTimeBounds(): boolean {
    return this.step.hasEventTimeBounds;
  }

  describe(): string {
    return `${this.kind}(${STEP_SETTING[this.step.kind]} ${this.step.describeSettings()})`;
  }

  createAssigner(): WindowAssigner {
    return this.step.createAssigner();
  }

  createTrigger(): Trigger {
    return this.step.createTrigger();
  }

  // Its step kind's windows, from this spec's own assigner (the step's).
  [probeWindows](): WindowProbe {
    return { windowsOf: stepWindowsOf(this), calendar: this.step[probeWindows]().calendar };
  }
}

/** The compaction option that builds each step kind, as describe() shows it. */
const STEP_SETTING = { count: 'count', tumbling: 'every', session: 'gap' } as const;

const TUMBLING_ONLY = ['offset', 'timeZone', 'weekStartsOn'] as const;

/**
 * The step of change-stream compaction (keep the latest state per entity within a step).
 * It reuses the count, tumbling and session window kinds and reports kind 'compact'.
 */
export function compaction(options: CompactionOptions): CompactionSpec {
  // Read loosely: callers from JavaScript (or with casts) can pass any shape.
  const raw: unknown = options;
  const given = (typeof raw === 'object' && raw !== null ? raw : {}) as Readonly<
    Record<string, unknown>
  >;
  const chosen = (['count', 'every', 'gap'] as const).filter((key) => given[key] !== undefined);
  if (chosen.length !== 1) {
    throw new ConfigError('compaction', 'must set exactly one of count, every or gap', options);
  }
  if (chosen[0] === 'every') {
    return new CompactionSpec(
      tumblingSpec(given.every as TumblingSize, given, 'compaction every', 'compaction'),
    );
  }
  for (const key of TUMBLING_ONLY) {
    if (given[key] !== undefined) {
      throw new ConfigError(
        `compaction ${key}`,
        'applies only with every (tumbling steps)',
        given[key],
      );
    }
  }
  return new CompactionSpec(
    chosen[0] === 'count'
      ? countSpec(given.count as number, 'compaction count')
      : sessionSpec(given.gap as Duration, 'compaction gap'),
  );
}
