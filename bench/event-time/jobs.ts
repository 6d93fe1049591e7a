import type { Aggregator } from '../../src/common/aggregator.js';
import { aggregate } from '../../src/dsl/pipeline.js';
import type { Source, Target } from '../../src/ports/ports.js';
import { StepProcessor } from '../../src/engine/step-processor.js';
import { WindowOperator } from '../../src/engine/window-operator.js';
import { isEventTimeSpec, type EventTimeWindowSpec } from '../../src/windows/event-time-spec.js';
import { hopping } from '../../src/windows/hopping.js';
import { session } from '../../src/windows/session.js';
import { tumbling } from '../../src/windows/tumbling.js';
import type { WindowSpec } from '../../src/windows/window-spec.js';
import type { Reading } from '../corpus.js';
import { processorBase } from '../hot-path/engine.js';

/** The event-time kinds measured, and the baseline: the step tumbling window. */
export const EVENT_TIME_KINDS = ['tumbling', 'hopping', 'session'] as const;
export type EventTimeKind = (typeof EVENT_TIME_KINDS)[number];
export type JobKind = 'step-tumbling' | EventTimeKind;

/** The corpus's jitter (bench/event-time/corpus.ts `disorderMs`) and the disorder the jobs allow. */
export const DISORDER_MS = 2_000;
const GRACE = '5s';

/** Sum of the readings' values per key; `merge` so that sessions can merge. */
export const sumOfValues: Aggregator<Reading, number, number> = {
  init: () => 0,
  add: (total, reading) => total + reading.value,
  result: (total) => total,
  merge: (first, second) => first + second,
};

/** The window of each kind; a 1-minute session of a key is open until its burst ends. */
export function windowOf(kind: JobKind): WindowSpec | EventTimeWindowSpec {
  switch (kind) {
    case 'step-tumbling':
      return tumbling('1m');
    case 'tumbling':
      return tumbling('1m', { grace: GRACE });
    case 'hopping':
      return hopping('1m', '20s', { grace: GRACE });
    case 'session':
      return session('1m', { grace: GRACE });
  }
}

/** `aggregate(source).window(w).key(sensor)[.maxOutOfOrderness(2s)].aggregate(sum).to(target)`. */
export function jobOf(kind: JobKind, source: Source, target: Target) {
  const keyed = aggregate<Reading>(source)
    .window(windowOf(kind))
    .key((reading) => reading.sensor);
  const timed = kind === 'step-tumbling' ? keyed : keyed.maxOutOfOrderness(DISORDER_MS);
  return timed.aggregate(sumOfValues).to(target);
}

/**
 * The processor `jobOf(kind, ...)` runs, built from the same parts as src/dsl/pipeline.ts
 * (on bench/hot-path/engine.ts's `processorBase`), for figures of the engine without a Runner.
 */
export function processorOf(
  kind: JobKind,
): StepProcessor<Reading, number, number> | WindowOperator<Reading, number, number> {
  const common = { ...processorBase(), aggregator: sumOfValues };
  const window = windowOf(kind);
  if (!isEventTimeSpec(window)) return new StepProcessor({ ...common, window });
  return new WindowOperator({
    ...common,
    window,
    maxOutOfOrderness: DISORDER_MS,
    early: undefined,
  });
}
