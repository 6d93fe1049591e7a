import type { WindowId } from './keyed-windows.js';

/**
 * The earliest and latest event time of each window's elements, by window id, in typed arrays:
 * what a kind whose windows report the range of their elements (count windows) keeps beside
 * KeyedWindows, which holds what every kind needs.
 */
export class WindowTimeRanges {
  private earliest = new Float64Array(16);
  private latest = new Float64Array(16);

  /** A window's first element: its range is that time alone (a reused id forgets the last). */
  begin(window: WindowId, time: number): void {
    if (window >= this.earliest.length) this.grow(window);
    this.earliest[window] = time;
    this.latest[window] = time;
  }

  /** One more element of a window `begin` started. */
  widen(window: WindowId, time: number): void {
    if (time < (this.earliest[window] as number)) this.earliest[window] = time;
    if (time > (this.latest[window] as number)) this.latest[window] = time;
  }

  earliestOf(window: WindowId): number {
    return this.earliest[window] as number;
  }

  latestOf(window: WindowId): number {
    return this.latest[window] as number;
  }

  private grow(window: WindowId): void {
    const capacity = Math.max(window + 1, Math.ceil(this.earliest.length * 1.25));
    const earliest = new Float64Array(capacity);
    const latest = new Float64Array(capacity);
    earliest.set(this.earliest);
    latest.set(this.latest);
    this.earliest = earliest;
    this.latest = latest;
  }
}
