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
    this.start = alignedStart(eventTime, this.size, this.offset);
    this.end = this.start + this.size;
  }
}

/** The latest start at or before `time` of windows every `step` ms from `offset`. */
export function alignedStart(time: number, step: number, offset: number): number {
  // `%` keeps the dividend's sign, so negative (pre-1970) times are floored by hand;
  // remainder-then-subtract stays exact where a division could round.
  let into = (time - offset) % step;
  if (into < 0) into += step;
  return time - into;
}
