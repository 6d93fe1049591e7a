import type { Key } from '../../../src/common/keyed-output.js';
import type { EventTimeWindows } from '../../../src/windows/event-time-kind.js';
import { createWindows, type WindowAssignment } from '../../../src/windows/event-time-kinds.js';
import { KeyedWindows, NO_WINDOW, type WindowId } from '../../../src/windows/keyed-windows.js';
import { Watermark } from '../../../src/windows/watermark.js';

/**
 * One event-time window kind driven directly, over a context that does what the window
 * operator does (open, fold, close) and nothing more. The accumulator is the list of values,
 * so an output shows which values a window took and in which order (a merge concatenates);
 * `add` throws for the value `throwOn`.
 */
export class KindHarness {
  readonly windows = new KeyedWindows<string[]>();
  readonly watermark = new Watermark(0);
  readonly kind: EventTimeWindows<string>;
  /** Windows the kind closed itself (a count reached), in the order it closed them. */
  readonly closed: WindowId[] = [];
  /** The offset of the message being placed. */
  offset = 0n;

  constructor(
    assignment: WindowAssignment,
    { multiValue = false, throwOn }: { multiValue?: boolean; throwOn?: string } = {},
  ) {
    this.kind = createWindows<string, string[]>(
      assignment,
      {
        windows: this.windows,
        watermark: this.watermark,
        aggregator: {
          init: () => [],
          add: (values, value) => {
            if (value === throwOn) throw new Error(`add refuses ${value}`);
            return [...values, value];
          },
          result: (values) => values,
          merge: (first, second) => [...first, ...second],
        },
        offset: () => this.offset,
        open: (key, start, end) =>
          this.windows.create(key, start, end, this.offset, this.watermark.value),
        accumulatorOf: (window) =>
          window !== NO_WINDOW && this.windows.count(window) > 0
            ? this.windows.accumulator(window)
            : [],
        fold: (window, accumulator) => {
          this.windows.fold(window, accumulator);
        },
        close: (window) => {
          this.windows.remove(window);
          this.closed.push(window);
        },
      },
      { multiValue },
    );
  }

  /** Places `value` of `key` at `time` as a new message, then moves the watermark to it. */
  place(key: Key, value: string, time: number, replaying = false): boolean {
    const placed = this.kind.place(key, value, time, replaying);
    this.watermark.advance(time);
    return placed;
  }

  /** The windows the watermark has closed now, as [key, bounds, values]. */
  closeDue(): [Key, [number, number], string[]][] {
    const into: WindowId[] = [];
    this.kind.closeDue(into);
    return into.map((window) => this.describe(window));
  }

  /** A key's open windows, as [bounds, values]. */
  open(key: Key): [[number, number], string[]][] {
    const open: [[number, number], string[]][] = [];
    const { windows } = this;
    for (
      let window = windows.first(key);
      window !== NO_WINDOW;
      window = windows.nextOfKey(window)
    ) {
      const [, bounds, values] = this.describe(window);
      open.push([bounds, values]);
    }
    return open;
  }

  describe(window: WindowId): [Key, [number, number], string[]] {
    const { start, end } = this.kind.bounds(window);
    return [this.windows.key(window), [start, end], this.windows.accumulator(window)];
  }
}
