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
  it("finds each key's windows through its key slot as keys lose their windows and others take their slots", () => {
    // A model of what the key index must answer: per key, its open windows in creation order.
    // Keys of different types that look alike ('1' and 1, null), removals first, in the
    // middle and last, and slots freed and taken by other keys while `first` caches a lookup.
    const windows = new KeyedWindows<number>();
    const model = new Map<string | number | null, WindowId[]>();
    const keys = ['1', 1, null, '', 'a', 'b', 'c', 'd', 'e', 0, -0.5, 'key-7', 7, 8, 9];
    let seed = 42;
    const random = (below: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % below;
    };
    for (let step = 0; step < 5_000; step++) {
      const key = keys[random(keys.length)] ?? null;
      const open = model.get(key) ?? [];
      // Keys keep one to four windows open, as hopping windows do.
      if (open.length === 0 || (open.length < 4 && random(2) === 0)) {
        windows.first(key); // the create's lookup, as the operator makes it
        open.push(windows.create(key, step, step + 10, BigInt(step), step));
        model.set(key, open);
      } else {
        const [removed] = open.splice(random(open.length), 1);
        windows.remove(removed as WindowId);
        if (open.length === 0) model.delete(key);
        if (random(4) === 0) windows.recycle();
      }
      // Half the time the key just changed, whose lookup `first` may have cached.
      const probe = random(2) === 0 ? key : (keys[random(keys.length)] ?? null);
      const listed: WindowId[] = [];
      for (let window = windows.first(probe); window !== NO_WINDOW;) {
        listed.push(window);
        expect(windows.key(window)).toBe(probe);
        window = windows.nextOfKey(window);
      }
      expect(listed).toEqual(model.get(probe) ?? []);
    }
  });
  it('forgets the cached lookup of a key that lost its last window while other slots are free', () => {
    const windows = new KeyedWindows<number>();
    const a = windows.create('a', 0, 10, 0n, 0);
    const b = windows.create('b', 0, 10, 1n, 0);
    windows.create('c', 0, 10, 2n, 0);
    windows.remove(a); // a's key slot is free
    expect(windows.first('b')).toBe(b);
    windows.remove(b); // b's too, while its lookup is the cached one
    expect(windows.first('b')).toBe(NO_WINDOW);
    const again = windows.create('b', 10, 20, 3n, 0);
    expect(windows.first('a')).toBe(NO_WINDOW);
    expect(windows.first('b')).toBe(again);
    expect(windows.nextOfKey(again)).toBe(NO_WINDOW);
  });
  it('keeps the slot of a key whose windows all closed, and drops keys idle through a sweep period', () => {
    const windows = new KeyedWindows<number>();
    const window = windows.create('back', 0, 10, 0n, 0);
    windows.remove(window);
    windows.recycle();
    expect(windows.indexedKeys).toBe(1); // idle, not dropped: it usually comes back
    expect(windows.first('back')).toBe(NO_WINDOW);
    const again = windows.create('back', 10, 20, 1n, 0);
    expect(windows.first('back')).toBe(again);
    expect(windows.indexedKeys).toBe(1);
    // 100,000 keys that never come back: swept, so the index follows the keys seen lately.
    let most = 0;
    for (let i = 0; i < 100_000; i++) {
      windows.remove(windows.create(`gone-${i}`, i, i + 10, BigInt(i), i));
      windows.recycle();
      most = Math.max(most, windows.indexedKeys);
    }
    expect(most).toBeGreaterThan(1_024); // a sweep period passed at least once
    expect(most).toBeLessThanOrEqual(2 * 1_024 + 2); // and 'back', and the key being created
    expect(windows.first('back')).toBe(again); // a key with windows is never dropped
  });
  it("finds each key's windows across sweeps of the key index, as groups of keys come, go and come back", () => {
    // Three groups of 2,000 keys take turns: each round, one group opens a window per key,
    // then closes them all (its keys go idle together, as a burst's do). A group is idle for
    // two rounds: swept once a full period passed, then back on new slots.
    const windows = new KeyedWindows<number>();
    const GROUP = 2_000;
    const keyOf = (group: number, i: number): string => `g${group}-${i}`;
    let swept = 0;
    for (let round = 0; round < 12; round++) {
      const group = round % 3;
      const opened: WindowId[] = [];
      for (let i = 0; i < GROUP; i++) {
        const key = keyOf(group, i);
        // A lookup cached before the create, as the operator makes it (the sweep comes
        // between recycles, when a key of the group may be the cached one).
        windows.first(key);
        opened.push(windows.create(key, round, round + 1, BigInt(round * GROUP + i), round));
        if (i % 2 === 0) opened.push(windows.create(key, round, round + 2, 0n, round));
      }
      for (let i = 0; i < GROUP; i += 97) {
        const first = windows.first(keyOf(group, i));
        expect(windows.key(first)).toBe(keyOf(group, i));
        expect(windows.nextOfKey(first) !== NO_WINDOW).toBe(i % 2 === 0);
        expect(windows.first(keyOf((group + 1) % 3, i))).toBe(NO_WINDOW);
      }
      const before = windows.indexedKeys;
      for (const window of opened) windows.remove(window);
      windows.recycle();
      if (windows.indexedKeys < before) swept += before - windows.indexedKeys;
      expect(windows.indexedKeys).toBeLessThanOrEqual(3 * GROUP);
      expect(windows.size).toBe(0);
    }
    expect(swept).toBeGreaterThanOrEqual(4 * GROUP); // groups were dropped and came back
  });
  it('closes windows by end, then start, then creation, whether or not the end queue hands them out so', () => {
    const windows = new KeyedWindows<number>();
    const created: WindowId[] = [];
    const open = (key: string, start: number, end: number): void => {
      const window = windows.create(key, start, end, BigInt(created.length), 0);
      windows.schedule(window);
      created.push(window);
    };
    // Aligned windows come out of the queue in closing order already.
    for (let i = 0; i < 50; i++) open(`k${i}`, 0, 10);
    // Same end, a later creation but an earlier start (a session): the start decides.
    open('late-but-earlier', 5, 20);
    open('early-start', 0, 20);
    const closed: WindowId[] = [];
    windows.closedBy((end) => end <= 20, closed);
    expect(closed).toEqual([...created.slice(0, 50), created[51], created[50]]);
  });
});
