import type { Key } from '../common/keyed-output.js';
import { isClosed, type AlignedAssigner } from './event-time-spec.js';
import type { EventTimeWindows, WindowContext, WindowKind } from './event-time-kind.js';
import { NO_WINDOW, type KeyedWindows, type WindowId } from './keyed-windows.js';
import { WatermarkTrigger } from './watermark-trigger.js';

/** Fixed bounds from the event time alone (tumbling, hopping). */
export interface AlignedAssignment {
  readonly type: 'aligned';
  /** Milliseconds after a window's end during which it still takes elements. */
  readonly grace: number;
  createAssigner(): AlignedAssigner;
}

/**
 * Tumbling and hopping windows (Flink's TumblingEventTimeWindows, SlidingEventTimeWindows):
 * the spec's assigner gives an element's windows from its time alone; each window the
 * watermark has not closed takes it, and closes when the watermark passes its end + grace.
 */
export const alignedWindows: WindowKind<AlignedAssignment> = {
  closedByWatermark: true,
  mergesWindows: false,
  create: (assignment, context) => new AlignedWindows(assignment, context),
  windowsOf(assignment) {
    const assigner = assignment.createAssigner();
    return (time, starts, ends) => assigner.assign(time, starts, ends);
  },
  graceOf: ({ grace }) => grace,
};

class AlignedWindows<T, A> implements EventTimeWindows<T> {
  readonly endsAtFlush = false;
  private readonly assigner: AlignedAssigner;
  private readonly trigger: WatermarkTrigger<A>;
  /** Reused for every value, so a message allocates no arrays. */
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  /** A value's accumulators and windows between fold and create. */
  private readonly accumulators: (A | undefined)[] = [];
  private readonly targets: WindowId[] = [];

  constructor(
    private readonly assignment: AlignedAssignment,
    private readonly context: WindowContext<T, A>,
  ) {
    this.assigner = assignment.createAssigner();
    this.trigger = new WatermarkTrigger(assignment.grace, context.watermark, context.windows);
  }

  place(key: Key, value: T, time: number): boolean {
    const { starts, ends, accumulators, targets, context } = this;
    const { grace } = this.assignment;
    // Emptied by pop: setting `length` is a runtime call, a few percent of the hot path.
    while (starts.length > 0) starts.pop();
    while (ends.length > 0) ends.pop();
    this.assigner.assign(time, starts, ends);
    const watermark = context.watermark.value;
    const first = context.windows.first(key);
    // Folded first, windows created after: an `add` that throws leaves no window behind.
    let placed = 0;
    for (let i = 0; i < starts.length; i++) {
      if (isClosed(ends[i] as number, grace, watermark)) continue;
      const window = startingAt(context.windows, first, starts[i] as number);
      accumulators[placed] = context.aggregator.add(context.accumulatorOf(window), value);
      targets[placed] = window;
      placed++;
    }
    let next = 0;
    for (let i = 0; i < starts.length; i++) {
      const end = ends[i] as number;
      if (isClosed(end, grace, watermark)) continue;
      let window = targets[next] as WindowId;
      if (window === NO_WINDOW) {
        window = context.open(key, starts[i] as number, end);
        context.windows.schedule(window);
      }
      context.fold(window, accumulators[next] as A);
      // Not kept past this value: it would hold a closed window's accumulator alive.
      accumulators[next] = undefined;
      next++;
    }
    return placed > 0;
  }

  closeDue(into: WindowId[]): void {
    this.trigger.closeDue(into);
  }

  bounds(window: WindowId): { start: number; end: number } {
    const { windows } = this.context;
    return { start: windows.start(window), end: windows.end(window) };
  }
}

/** The window from `first` on (a key's windows) that starts at `start`, or NO_WINDOW. */
function startingAt<A>(windows: KeyedWindows<A>, first: WindowId, start: number): WindowId {
  for (let window = first; window !== NO_WINDOW; window = windows.nextOfKey(window)) {
    if (windows.start(window) === start) return window;
  }
  return NO_WINDOW;
}
