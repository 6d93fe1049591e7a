import type { Key } from '../common/keyed-output.js';
import type {
  EventTimeWindows,
  KindRecovery,
  WindowContext,
  WindowKind,
} from './event-time-kind.js';
import { NO_WINDOW, type WindowId } from './keyed-windows.js';
import { WindowTimeRanges } from './window-time-ranges.js';

/** Per-key count windows: closed by their n-th element, never by the watermark. */
export interface CountAssignment {
  readonly type: 'count';
  readonly n: number;
}

/**
 * Count windows per key (Flink's keyed count window: a global window and a count trigger):
 * a key's values go to its one open window, which closes at its n-th value. The windows of
 * different keys overlap in offsets, so a result records where each key's open window began.
 */
export const perKeyCounts: WindowKind<CountAssignment> = {
  closedByWatermark: false,
  mergesWindows: false,
  create: (assignment, context, { multiValue }) =>
    new PerKeyCounts(assignment.n, context, multiValue),
  // An element's own window: one of several elements is representable when each element's is.
  windowsOf: () => (time, starts, ends) => {
    starts.push(time);
    ends.push(time + 1);
  },
  graceOf: () => undefined,
};

class PerKeyCounts<T, A> implements EventTimeWindows<T> {
  // A flush ends count windows: a window continued after it would not count to n.
  readonly endsAtFlush = true;
  /** While replaying: where each key's open window began. */
  private openCountsAt: Map<Key, { offset: bigint; skip: number }> | undefined;
  /**
   * Over a multi-value message: how many values of each key the message placed so far (a
   * key's window may close inside a message and the next one open there).
   */
  private readonly valuesOfKey = new Map<Key, number>();
  /** What a window reports: the range of its elements' event times. */
  private readonly ranges = new WindowTimeRanges();

  constructor(
    private readonly n: number,
    private readonly context: WindowContext<T, A>,
    /** Only a multi-value job counts a key's values per message: a single value needs no lookup. */
    private readonly multiValue: boolean,
  ) {}

  beginMessage(): void {
    this.valuesOfKey.clear();
  }

  place(key: Key, value: T, time: number, replaying: boolean): boolean {
    const { context } = this;
    // Values of this key earlier in this message (several only in a multi-value message).
    const before = this.multiValue ? (this.valuesOfKey.get(key) ?? 0) : 0;
    if (this.multiValue) this.valuesOfKey.set(key, before + 1);
    const { openCountsAt } = this;
    if (replaying && openCountsAt !== undefined) {
      // A key's values before its open window began were published in closed windows.
      const from = openCountsAt.get(key);
      const offset = context.offset();
      if (from === undefined || offset < from.offset) return true;
      if (offset === from.offset && before < from.skip) return true;
    }
    const { windows } = context;
    const window = windows.first(key);
    const accumulator = context.aggregator.add(context.accumulatorOf(window), value);
    let target = window;
    if (target === NO_WINDOW) {
      target = context.open(key, time, time + 1);
      windows.setSkip(target, before);
      this.ranges.begin(target, time);
    } else {
      this.ranges.widen(target, time);
    }
    context.fold(target, accumulator);
    if (windows.count(target) >= this.n) context.close(target);
    return true;
  }

  // Closed at their n-th value only: never filed for the watermark.
  closeDue(): void {}

  /** [earliest, latest + 1) of the window's event times: exact, end-exclusive, never empty. */
  bounds(window: WindowId): { start: number; end: number } {
    const { ranges } = this;
    return { start: ranges.earliestOf(window), end: ranges.latestOf(window) + 1 };
  }

  recovery(): KindRecovery {
    const { windows } = this.context;
    const openCounts: [Key, bigint, number?][] = [];
    for (const window of windows.openInCreationOrder()) {
      const key = windows.key(window);
      const skip = windows.skip(window);
      const firstOffset = windows.firstOffset(window);
      openCounts.push(skip > 0 ? [key, firstOffset, skip] : [key, firstOffset]);
    }
    return { openCounts };
  }

  restore(state: KindRecovery): void {
    this.openCountsAt = new Map(
      (state.openCounts ?? []).map(([key, offset, skip = 0]) => [key, { offset, skip }]),
    );
  }

  endReplay(): void {
    this.openCountsAt = undefined;
  }
}
