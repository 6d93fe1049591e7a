import type { Key } from '../common/keyed-output.js';
import { isClosed } from './event-time-spec.js';
import type { EventTimeWindows, WindowContext, WindowKind } from './event-time-kind.js';
import { NO_WINDOW, type WindowId } from './keyed-windows.js';
import { WatermarkTrigger } from './watermark-trigger.js';

/** Per-key sessions, merged when an element bridges two. */
export interface MergingAssignment {
  readonly type: 'merging';
  readonly gap: number;
  readonly grace: number;
}

/**
 * Per-key sessions (Flink's EventTimeSessionWindows, a merging assigner): an element's own
 * session is [t, t + gap); the sessions of its key it overlaps or touches merge into the
 * oldest one, and a session closes when the watermark passes its end + grace.
 */
export const mergingSessions: WindowKind<MergingAssignment> = {
  closedByWatermark: true,
  mergesWindows: true,
  create: (assignment, context) => new MergingSessions(assignment, context),
  // An element's own session: one of several elements is representable when each element's is.
  windowsOf: ({ gap }) => {
    return (time, starts, ends) => {
      starts.push(time);
      ends.push(time + gap);
    };
  },
  graceOf: ({ grace }) => grace,
};

class MergingSessions<T, A> implements EventTimeWindows<T> {
  readonly endsAtFlush = false;
  private readonly trigger: WatermarkTrigger<A>;
  /** Reused for every value: the sessions it bridges. */
  private readonly merging: WindowId[] = [];

  constructor(
    private readonly assignment: MergingAssignment,
    private readonly context: WindowContext<T, A>,
  ) {
    this.trigger = new WatermarkTrigger(assignment.grace, context.watermark, context.windows);
  }

  place(key: Key, value: T, time: number): boolean {
    const { gap, grace } = this.assignment;
    const { merging, context } = this;
    const { aggregator, windows } = context;
    merging.length = 0;
    for (
      let window = windows.first(key);
      window !== NO_WINDOW;
      window = windows.nextOfKey(window)
    ) {
      if (time <= windows.end(window) && time + gap >= windows.start(window)) merging.push(window);
    }
    if (merging.length === 0) {
      if (isClosed(time + gap, grace, context.watermark.value)) return false;
      const accumulator = aggregator.add(aggregator.init(), value);
      const window = context.open(key, time, time + gap);
      context.fold(window, accumulator);
      windows.schedule(window);
      return true;
    }
    // The oldest session absorbs the others, their accumulators merged in creation order (a
    // session a flush emptied has none).
    const survivor = merging[0] as WindowId;
    let accumulator: A | undefined;
    let filled = false;
    for (const window of merging) {
      if (windows.count(window) === 0) continue;
      const own = windows.accumulator(window);
      accumulator = filled ? this.merge(accumulator as A, own) : own;
      filled = true;
    }
    accumulator = aggregator.add(filled ? (accumulator as A) : aggregator.init(), value);
    for (let i = 1; i < merging.length; i++) windows.merge(survivor, merging[i] as WindowId);
    windows.widen(survivor, time, time + gap);
    context.fold(survivor, accumulator);
    return true;
  }

  private merge(first: A, second: A): A {
    const { aggregator } = this.context;
    // The pipeline refuses merging windows without `merge`; this guards direct use.
    if (aggregator.merge === undefined) {
      throw new TypeError('session windows need the aggregate to merge');
    }
    return aggregator.merge(first, second);
  }

  closeDue(into: WindowId[]): void {
    this.trigger.closeDue(into);
  }

  bounds(window: WindowId): { start: number; end: number } {
    const { windows } = this.context;
    return { start: windows.start(window), end: windows.end(window) };
  }
}
