import { describe, expect, it } from 'vitest';
import { KeyedWindows, NO_WINDOW, type WindowId } from '../../../src/windows/keyed-windows.js';

describe('the keyed windows of event-time jobs', () => {
  it('reuses the slots of removed windows behind a long-open older one, so memory follows the open windows', () => {
    const windows = new KeyedWindows<number>();
    const oldest = windows.create('long-lived', 0, 10, 0n, Number.NEGATIVE_INFINITY);
    for (let i = 1; i <= 100_000; i++) {
      const churn = windows.create(`key-${i}`, i, i + 10, BigInt(i), i);
      windows.remove(churn);
      windows.recycle();
    }
    expect(windows.size).toBe(1);
    expect(windows.slots).toBe(1);
    expect(windows.oldestOpen()).toBe(oldest);
    expect(windows.firstOffset(oldest)).toBe(0n);
  });

  it('keeps the creation order of the open windows through removals and reused slots', () => {
    const windows = new KeyedWindows<number>();
    const kept: [string, bigint][] = [];
    for (let i = 0; i < 5_000; i++) {
      const window = windows.create(`key-${i}`, i, i + 10, BigInt(i), i);
      if (i % 7 === 0) kept.push([`key-${i}`, BigInt(i)]);
      else windows.remove(window);
      if (i % 3 === 0) windows.recycle();
    }
    expect(
      [...windows.openInCreationOrder()].map((window) => [
        windows.key(window),
        windows.firstOffset(window),
      ]),
    ).toEqual(kept);
    expect(windows.slots).toBeLessThan(kept.length + 10);
  });

  it('keeps a removed window readable until recycled, and a merged-away one out of reuse until the heap drops it', () => {
    const windows = new KeyedWindows<number>();
    const due = (end: number) => end <= 100;
    const filed = windows.create('a', 0, 50, 0n, 0);
    windows.schedule(filed);
    windows.fold(filed, 7);
    windows.remove(filed); // merged away while in the heap
    windows.recycle();
    const closed = windows.create('b', 0, 10, 1n, 0);
    expect(closed).not.toBe(filed);
    windows.remove(closed);
    expect([windows.key(closed), windows.count(closed)]).toEqual(['b', 0]);
    windows.recycle();
    const reused = windows.create('c', 0, 10, 2n, 0);
    expect(reused).toBe(closed);
    windows.schedule(reused);
    const into: WindowId[] = [];
    windows.closedBy(due, into); // the merged-away window comes up: dropped, not closed
    expect(into.map((window) => windows.key(window))).toEqual(['c']);
    windows.recycle();
    expect(windows.size).toBe(0);
    expect(windows.oldestOpen()).toBe(NO_WINDOW);
    expect(windows.slots).toBe(0);
  });
});
