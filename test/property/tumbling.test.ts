import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Placement, tumbling } from '../../src/windows/index.js';

const MAX_SIZE = 30 * 24 * 3_600_000;
// The whole range of a JS Date (±100 000 000 days around the epoch), where every
// millisecond and every window bound is an exact double.
const time = fc.integer({ min: -8.64e15, max: 8.64e15 });
const sizeAndOffset = fc
  .integer({ min: 1, max: MAX_SIZE })
  .chain((size) => fc.tuple(fc.constant(size), fc.integer({ min: 0, max: size - 1 })));

function floorMod(value: number, modulus: number): number {
  return ((value % modulus) + modulus) % modulus;
}

describe('fixed tumbling windows (property)', () => {
  it('should partition time into aligned windows of exactly the size', () => {
    fc.assert(
      fc.property(sizeAndOffset, time, ([size, offset], t) => {
        const assigner = tumbling(size, { offset }).createAssigner();
        assigner.open(t);
        const { start, end } = assigner.snapshot();
        expect(start).toBeLessThanOrEqual(t);
        expect(t).toBeLessThan(end);
        expect(end - start).toBe(size);
        expect(floorMod(start - offset, size)).toBe(0);
        expect(assigner.place(t)).toBe(Placement.Inside);
      }),
      { numRuns: 1000 },
    );
  });

  it('should place any other time as its own window compares to the open one', () => {
    fc.assert(
      fc.property(sizeAndOffset, time, time, ([size, offset], t, other) => {
        const spec = tumbling(size, { offset });
        const open = spec.createAssigner();
        open.open(t);
        const own = spec.createAssigner();
        own.open(other);
        const expected =
          own.start === open.start
            ? Placement.Inside
            : own.start > open.start
              ? Placement.Later
              : Placement.Late;
        expect(open.place(other)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('calendar tumbling windows (property)', () => {
  const zones = ['UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata'];
  const calendar = fc.record({
    size: fc.constantFrom('1d', '1w', '1mo'),
    timeZone: fc.constantFrom(...zones),
    offset: fc.integer({ min: 0, max: 24 * 3_600_000 - 1 }),
  });
  // 1950 to 2100: zones have settled rules, so bounds are well defined.
  const calendarTime = fc.integer({ min: -631_152_000_000, max: 4_102_444_800_000 });

  it('should hold each time in a window that meets its neighbours exactly', () => {
    fc.assert(
      fc.property(calendar, calendarTime, ({ size, timeZone, offset }, t) => {
        const assigner = tumbling(size, { timeZone, offset }).createAssigner();
        assigner.open(t);
        const { start, end } = assigner.snapshot();
        expect(start).toBeLessThanOrEqual(t);
        expect(t).toBeLessThan(end);
        assigner.open(end);
        expect(assigner.start).toBe(end);
        assigner.open(start - 1);
        expect(assigner.end).toBe(start);
      }),
      { numRuns: 300 },
    );
  });
});
