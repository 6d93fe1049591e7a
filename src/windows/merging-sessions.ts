import type { Key } from '../common/keyed-output.js';
import { isClosed } from './event-time-spec.js';
import type { EventTimeWindows, WindowContext, WindowKind } from './event-time-kind.js';
import type { OpenWindow } from './keyed-windows.js';
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
};

class MergingSessions<T, A> implements EventTimeWindows<T, A> {
  readonly endsAtFlush = false;
  private readonly trigger: WatermarkTrigger<A>;
  /** Reused for every value: the sessions it bridges. */
  private readonly merging: OpenWindow<A>[] = [];

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
    for (const window of windows.of(key)) {
      if (time <= window.end && time + gap >= window.start) merging.push(window);
    }
    if (merging.length === 0) {
      if (isClosed(time + gap, grace, context.watermark.value)) return false;
      const accumulator = aggregator.add(aggregator.init(), value);
      const window = context.open(key, time, time + gap);
      context.fold(window, accumulator, time);
      windows.schedule(window);
      return true;
    }
    // The oldest session absorbs the others, their accumulators merged in creation order (a
    // session a flush emptied has none).
    const survivor = merging[0] as OpenWindow<A>;
    let accumulator: A | undefined;
    let filled = false;
    for (const window of merging) {
      if (window.count === 0) continue;
      accumulator = filled ? this.merge(accumulator as A, window.accumulator) : window.accumulator;
      filled = true;
    }
    accumulator = aggregator.add(filled ? (accumulator as A) : aggregator.init(), value);
    for (let i = 1; i < merging.length; i++) {
      const other = merging[i] as OpenWindow<A>;
      survivor.start = Math.min(survivor.start, other.start);
      survivor.end = Math.max(survivor.end, other.end);
      survivor.count += other.count;
      survivor.minTime = Math.min(survivor.minTime, other.minTime);
      survivor.maxTime = Math.max(survivor.maxTime, other.maxTime);
      if (other.continues) survivor.continues = true;
      windows.remove(other);
    }
    survivor.start = Math.min(survivor.start, time);
    // Still filed under its old end: the heap re-files a grown session when it comes up.
    survivor.end = Math.max(survivor.end, time + gap);
    context.fold(survivor, accumulator, time);
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

  closeDue(into: OpenWindow<A>[]): void {
    this.trigger.closeDue(into);
  }

  bounds(window: OpenWindow<A>): { start: number; end: number } {
    return { start: window.start, end: window.end };
  }
}
