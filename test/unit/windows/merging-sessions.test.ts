import { describe, expect, it } from 'vitest';
import { session } from '../../../src/index.js';
import { mergingSessions } from '../../../src/windows/merging-sessions.js';
import { KindHarness } from './kind-harness.js';

describe('merging sessions, driven directly', () => {
  it("opens a value's own session [t, t + gap), and grows it with a value that touches it", () => {
    const sessions = new KindHarness(session(10, { grace: 0 }).assignment);
    sessions.place('k', 'v1', 100);
    sessions.place('k', 'v2', 110); // exactly gap after: joins
    expect(sessions.open('k')).toEqual([
      [
        [100, 120],
        ['v1', 'v2'],
      ],
    ]);
    sessions.place('k', 'v3', 121); // more than gap after the latest: its own
    expect(sessions.open('k')).toEqual([
      [
        [100, 120],
        ['v1', 'v2'],
      ],
      [[121, 131], ['v3']],
    ]);
  });

  it('grows a session back with a value exactly gap before its start, not one further', () => {
    const sessions = new KindHarness(session(10, { grace: 100 }).assignment);
    sessions.place('k', 'v1', 110);
    sessions.place('k', 'v2', 100); // its own session would end at 110: touches
    expect(sessions.open('k')).toEqual([
      [
        [100, 120],
        ['v1', 'v2'],
      ],
    ]);
    sessions.place('k', 'v3', 89); // its own would end at 99: apart
    expect(sessions.open('k')).toEqual([
      [
        [100, 120],
        ['v1', 'v2'],
      ],
      [[89, 99], ['v3']],
    ]);
  });

  it('merges the sessions a value bridges into the oldest, accumulators in creation order', () => {
    const sessions = new KindHarness(session(10, { grace: 100 }).assignment);
    sessions.place('k', 'made-first', 115);
    sessions.place('k', 'earlier', 100);
    sessions.place('other', 'o', 112);
    sessions.place('k', 'bridge', 108); // touches [100, 110) and [115, 125)
    expect(sessions.open('k')).toEqual([
      [
        [100, 125],
        ['made-first', 'earlier', 'bridge'],
      ],
    ]);
    expect(sessions.open('other')).toEqual([[[112, 122], ['o']]]);
    expect(sessions.windows.size).toBe(2);
  });

  it('closes a session when the watermark passes its grown end + grace, not its first end', () => {
    const sessions = new KindHarness(session(10, { grace: 5 }).assignment);
    sessions.place('k', 'v1', 100);
    sessions.place('k', 'v2', 108); // the session ends at 118 now, filed under 110
    sessions.place('x', 'x1', 120);
    expect(sessions.closeDue()).toEqual([]); // 120 < 118 + 5
    sessions.place('x', 'x2', 123);
    expect(sessions.closeDue()).toEqual([['k', [100, 118], ['v1', 'v2']]]);
  });

  it('refuses a value whose own session is already closed (late)', () => {
    const sessions = new KindHarness(session(10, { grace: 0 }).assignment);
    sessions.place('k', 'v1', 200);
    expect(sessions.place('j', 'late', 150)).toBe(false); // 150 + 10 <= watermark 200
    expect(sessions.open('j')).toEqual([]);
    expect(sessions.place('k', 'joins', 195)).toBe(true); // touches the open session
  });

  it('changes no session when the aggregate throws', () => {
    const sessions = new KindHarness(session(10, { grace: 100 }).assignment, { throwOn: 'bad' });
    sessions.place('k', 'a', 100);
    sessions.place('k', 'b', 125);
    expect(() => sessions.place('k', 'bad', 112)).toThrow('add refuses bad');
    expect(sessions.open('k')).toEqual([
      [[100, 110], ['a']],
      [[125, 135], ['b']],
    ]);
  });

  it('probes the session a lone element opens', () => {
    const starts: number[] = [];
    const ends: number[] = [];
    mergingSessions.windowsOf(session(10, { grace: 0 }).assignment)(7, starts, ends);
    expect([starts, ends]).toEqual([[7], [17]]);
  });
});
