import { describe, expect, it } from 'vitest';
import { count } from '../../../src/index.js';
import { perKeyCounts } from '../../../src/windows/per-key-counts.js';
import { KindHarness } from './kind-harness.js';

const byTwo = count(2, { perKey: true }).assignment;

describe('per-key count windows, driven directly', () => {
  it("closes a key's window at its n-th value, whatever the other keys and the watermark", () => {
    const counts = new KindHarness(byTwo);
    counts.place('a', 'a1', 50);
    counts.place('b', 'b1', 10);
    counts.place('a', 'a2', 40);
    expect(counts.closed.map((window) => counts.describe(window))).toEqual([
      ['a', [40, 51], ['a1', 'a2']], // [earliest, latest + 1)
    ]);
    expect(counts.closeDue()).toEqual([]); // never by the watermark
    expect(counts.open('b')).toEqual([[[10, 11], ['b1']]]);
    expect(counts.place('a', 'a3', 1)).toBe(true); // never late
    expect(counts.open('a')).toEqual([[[1, 2], ['a3']]]);
  });

  it('records where each open window began, with the values of a multi-value message before it', () => {
    const counts = new KindHarness(byTwo, { multiValue: true });
    counts.offset = 5n;
    counts.kind.beginMessage?.();
    for (const value of ['a1', 'a2', 'a3']) counts.place('a', value, 1);
    counts.offset = 6n;
    counts.kind.beginMessage?.();
    counts.place('b', 'b1', 1);
    expect(counts.kind.recovery?.()).toEqual({
      openCounts: [
        ['a', 5n, 2],
        ['b', 6n],
      ],
    });
  });

  it('re-reads from a recorded state: values of a key before its open window began are skipped', () => {
    const counts = new KindHarness(byTwo, { multiValue: true });
    counts.kind.restore?.({ openCounts: [['a', 5n, 2]] });
    counts.offset = 4n;
    counts.kind.beginMessage?.();
    counts.place('a', 'published-before', 1, true);
    counts.place('b', 'b-published', 1, true); // no open window of b: published
    counts.offset = 5n;
    counts.kind.beginMessage?.();
    for (const value of ['a1', 'a2', 'a3']) counts.place('a', value, 1, true);
    expect(counts.open('a')).toEqual([[[1, 2], ['a3']]]);
    expect(counts.closed).toEqual([]); // nothing published again
    expect(counts.open('b')).toEqual([]);
    counts.kind.endReplay?.();
    counts.offset = 7n;
    counts.place('b', 'b-new', 2);
    expect(counts.open('b')).toEqual([[[2, 3], ['b-new']]]);
  });

  it('ends its windows at a flush, and probes a lone element as [t, t + 1)', () => {
    expect(new KindHarness(byTwo).kind.endsAtFlush).toBe(true);
    const starts: number[] = [];
    const ends: number[] = [];
    perKeyCounts.windowsOf(byTwo)(9, starts, ends);
    expect([starts, ends]).toEqual([[9], [10]]);
  });
});
