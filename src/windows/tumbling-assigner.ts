import { Placement, type WindowAssigner } from './window-assigner.js';

/**
 * What fixed and calendar tumbling windows share: the open window's bounds are computed
 * once in `open()`, so `place()` is two comparisons against cached numbers.
 */
export abstract class TumblingAssigner implements WindowAssigner {
  // NaN until open(): every comparison with NaN is false, which makes misuse visible in
  // snapshots rather than inventing a window.
  start = Number.NaN;
  end = Number.NaN;

  abstract open(eventTime: number): void;

  place(eventTime: number): Placement {
    if (eventTime >= this.end) return Placement.Later;
    if (eventTime < this.start) return Placement.Late;
    return Placement.Inside;
  }

  // A tumbling window's bounds do not depend on its elements.
  add(): void {}

  snapshot(): { start: number; end: number } {
    return { start: this.start, end: this.end };
  }

  reopen(start: number, end: number): void {
    this.start = start;
    this.end = end;
  }
}

/** Windows of one fixed length, aligned to the epoch plus `offset` (0 <= offset < size). */
export class FixedTumblingAssigner extends TumblingAssigner {
  constructor(
    private readonly size: number,
    private readonly offset: number,
  ) {
    super();
  }

  open(eventTime: number): void {
    // `%` keeps the dividend's sign, so negative (pre-1970) times are floored by hand;
    // remainder-then-subtract stays exact where a division could round.
    let intoWindow = (eventTime - this.offset) % this.size;
    if (intoWindow < 0) intoWindow += this.size;
    this.start = eventTime - intoWindow;
    this.end = this.start + this.size;
  }
}
