import { describe, expect, it } from 'vitest';
import { hopping, tumbling } from '../../../src/index.js';
import { alignedWindows } from '../../../src/windows/aligned-windows.js';
import { KindHarness } from './kind-harness.js';

describe('aligned windows (tumbling and hopping), driven directly', () => {
  it('puts a value in the tumbling window of its time, per key, and closes it when the watermark passes end + grace', () => {
    const windows = new KindHarness(tumbling(10, { grace: 5 }).assignment);
    expect(windows.place('a', 'a1', 3)).toBe(true);
    expect(windows.place('b', 'b1', 7)).toBe(true);
    expect(windows.place('a', 'a2', 12)).toBe(true);
    expect(windows.open('a')).toEqual([
      [[0, 10], ['a1']],
      [[10, 20], ['a2']],
    ]);
    expect(windows.closeDue()).toEqual([]); // watermark 12 < 10 + 5
    expect(windows.place('a', 'a3', 9)).toBe(true); // within the grace
    expect(windows.place('b', 'b2', 15)).toBe(true); // watermark 15: [0, 10) closes
    expect(windows.closeDue()).toEqual([
      ['a', [0, 10], ['a1', 'a3']],
      ['b', [0, 10], ['b1']],
    ]);
    expect(windows.open('a')).toEqual([[[10, 20], ['a2']]]);
  });

  it('refuses a value whose every window is closed (late), and opens no window for it', () => {
    const windows = new KindHarness(tumbling(10, { grace: 0 }).assignment);
    windows.place('a', 'a1', 25);
    expect(windows.place('a', 'late', 9)).toBe(false);
    expect(windows.open('a')).toEqual([[[20, 30], ['a1']]]);
  });

  it('puts a hopping value in every window holding its time, and takes it late only where closed', () => {
    const windows = new KindHarness(hopping(30, 10, { grace: 0 }).assignment);
    windows.place('k', 'v1', 25);
    expect(windows.open('k')).toEqual([
      [[0, 30], ['v1']],
      [[10, 40], ['v1']],
      [[20, 50], ['v1']],
    ]);
    windows.place('k', 'v2', 35); // watermark 35: [0, 30) closes
    expect(windows.closeDue()).toEqual([['k', [0, 30], ['v1']]]);
    expect(windows.place('k', 'v3', 28)).toBe(true); // [10, 40) and [20, 50) still take it
    expect(windows.open('k').map(([bounds, values]) => [bounds, values.length])).toEqual([
      [[10, 40], 3],
      [[20, 50], 3],
      [[30, 60], 1],
    ]);
  });

  it('leaves no window behind when the aggregate throws', () => {
    const windows = new KindHarness(hopping(20, 10, { grace: 0 }).assignment, { throwOn: 'bad' });
    windows.place('k', 'v1', 15);
    expect(() => windows.place('k', 'bad', 25)).toThrow('add refuses bad');
    expect(windows.open('k')).toEqual([
      [[0, 20], ['v1']],
      [[10, 30], ['v1']],
    ]);
    expect(windows.windows.size).toBe(2);
  });

  it('probes the windows of a lone element as the assigner gives them', () => {
    const windowsOf = alignedWindows.windowsOf(hopping(30, 10, { grace: 0 }).assignment);
    const starts: number[] = [];
    const ends: number[] = [];
    windowsOf(25, starts, ends);
    expect([starts, ends]).toEqual([
      [0, 10, 20],
      [30, 40, 50],
    ]);
  });
});
