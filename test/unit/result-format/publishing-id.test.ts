// The publishing ids of a step's writes (src/result-format/publishing-id.ts): the resume point
// the broker keeps. Their layout is on the wire, so it is pinned bit for bit, with the ranges
// the scheme refuses and how an id of each kind reads back.
import { describe, expect, it } from 'vitest';
import {
  MAX_STEP_OFFSET,
  MAX_STEP_WRITES,
  lastWriteId,
  readStepId,
  wholeStepOffset,
  writeId,
  writePosition,
} from '../../../src/result-format/publishing-id.js';

const SCHEME = 2n ** 62n;

describe('the publishing id of a write', () => {
  it('is 2^62 + offset × 2^16 + its index, or + 65535 for the step’s last write', () => {
    expect(writeId(5n, 0, 3)).toBe(SCHEME + 5n * 65_536n);
    expect(writeId(5n, 1, 3)).toBe(SCHEME + 5n * 65_536n + 1n);
    expect(writeId(5n, 2, 3)).toBe(SCHEME + 5n * 65_536n + 65_535n);
    expect(lastWriteId(0n)).toBe(SCHEME + 65_535n);
    // Every write of a step above the step before, and above every offset an earlier version
    // used as an id.
    const order = [
      MAX_STEP_OFFSET,
      writeId(5n, 0, 3),
      writeId(5n, 1, 3),
      lastWriteId(5n),
      writeId(6n, 0, 2),
    ];
    for (const [i, id] of order.slice(1).entries()) expect(id > (order[i] as bigint)).toBe(true);
  });

  it('holds offsets 0 to 2^46 - 1, and 1 to 65,535 writes of a step', () => {
    expect(MAX_STEP_OFFSET).toBe(2n ** 46n - 1n);
    expect(MAX_STEP_WRITES).toBe(65_535);
    expect(lastWriteId(MAX_STEP_OFFSET)).toBe(2n ** 63n - 1n);
    for (const offset of [-1n, MAX_STEP_OFFSET + 1n]) {
      expect(() => lastWriteId(offset)).toThrow(
        new RangeError(`a step's last offset must be 0 to ${MAX_STEP_OFFSET}, got ${offset}`),
      );
    }
    expect(writeId(5n, 65_533, 65_535)).toBe(SCHEME + 5n * 65_536n + 65_533n);
    expect(writeId(5n, 65_534, 65_535)).toBe(lastWriteId(5n));
    for (const [write, writes] of [
      [-1, 2],
      [2, 2],
      [3, 2],
      [0.5, 2],
      [0, 65_536],
    ] as const) {
      expect(() => writeId(5n, write, writes)).toThrow(
        new RangeError(`write ${write} of ${writes}: a step takes 1 to 65535 writes`),
      );
    }
  });
});

describe('a publishing id read back', () => {
  it('tells never, an earlier version’s offset, and a write of a step, whole or not', () => {
    expect(readStepId(0n)).toEqual({ kind: 'none' });
    expect(readStepId(9n)).toEqual({ kind: 'offset', offset: 9n });
    expect(readStepId(writeId(5n, 1, 3))).toEqual({
      kind: 'write',
      offset: 5n,
      write: 1,
      last: false,
    });
    expect(readStepId(lastWriteId(MAX_STEP_OFFSET))).toEqual({
      kind: 'write',
      offset: MAX_STEP_OFFSET,
      write: 65_535,
      last: true,
    });
  });

  it('orders writes by step offset and index, a whole step’s last write and an earlier id at 65,535', () => {
    expect(writePosition(0n)).toEqual({ offset: 0n, write: 65_535 });
    expect(writePosition(9n)).toEqual({ offset: 9n, write: 65_535 });
    expect(writePosition(writeId(5n, 1, 3))).toEqual({ offset: 5n, write: 1 });
    expect(writePosition(lastWriteId(5n))).toEqual({ offset: 5n, write: 65_535 });
  });

  it('covers a source offset whole only when its step is', () => {
    expect(wholeStepOffset(0n)).toBeUndefined();
    expect(wholeStepOffset(9n)).toBe(9n);
    expect(wholeStepOffset(lastWriteId(5n))).toBe(5n);
    expect(wholeStepOffset(writeId(5n, 0, 2))).toBeUndefined();
  });
});
