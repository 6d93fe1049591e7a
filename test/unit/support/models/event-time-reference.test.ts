// Hand-worked examples that pin the naive event-time reference model to the rules of issue 12:
// each expected result below was worked out on paper from the rules, message by message.
import { describe, expect, it } from 'vitest';
import {
  referenceRun,
  referenceRunDetailed,
  type ReferenceConfig,
  type ReferenceMessage,
  type ReferenceWindow,
} from '../../../support/models/event-time-reference.js';

/**
 * Messages at offsets 0, 1, ... with value 2^offset, so that a sum names exactly the messages
 * in it (a sum of 10 = offsets 1 and 3).
 */
function stream(...messages: [key: string, time: number, filtered?: 'filtered'][]) {
  return messages.map(([key, time, filtered], offset): ReferenceMessage => ({
    offset,
    key,
    time,
    value: 2 ** offset,
    ...(filtered === undefined ? {} : { filtered: true }),
  }));
}

function config(
  window: ReferenceWindow,
  maxOutOfOrderness = 0,
  late: 'drop' | 'side' = 'side',
): ReferenceConfig {
  return { window, maxOutOfOrderness, late };
}

/** What a result holds besides its outputs, when nothing was late or filtered. */
const quiet = { late: [], lateDropped: 0, filtered: 0 };

describe('the event-time reference model', () => {
  it('keeps a tumbling window open for its grace while the next one fills, and adds a message to it meanwhile', () => {
    const tumbling = config({ type: 'tumbling', size: 10, grace: 5 });
    // wm after each: 3, 12 (the first window needs 15), 12 (t=8 joins [0, 10)), 14, 15 (closes
    // [0, 10)), 30 (closes [10, 20), 25 <= 30); [30, 40) stays open.
    const results = referenceRun(
      stream(['a', 3], ['a', 12], ['a', 8], ['a', 14], ['a', 15], ['a', 30]),
      tumbling,
    );
    expect(results).toEqual([
      {
        decision: 4,
        firstOffset: 0,
        messages: 5,
        outputs: [{ key: 'a', start: 0, end: 10, count: 2, sum: 1 + 4 }],
        ...quiet,
      },
      {
        decision: 5,
        firstOffset: 5,
        messages: 1,
        outputs: [{ key: 'a', start: 10, end: 20, count: 3, sum: 2 + 8 + 16 }],
        ...quiet,
      },
    ]);
  });

  it("puts the value of a message behind its closed window in the next result under 'side'", () => {
    const messages = stream(['a', 5], ['a', 12], ['a', 7], ['a', 25]);
    // t=7 comes with wm 12: [0, 10) closed at offset 1 (10 <= 12), so it is late.
    expect(referenceRun(messages, config({ type: 'tumbling', size: 10, grace: 0 }))).toEqual([
      {
        decision: 1,
        firstOffset: 0,
        messages: 2,
        outputs: [{ key: 'a', start: 0, end: 10, count: 1, sum: 1 }],
        ...quiet,
      },
      {
        decision: 3,
        firstOffset: 2,
        messages: 2,
        outputs: [{ key: 'a', start: 10, end: 20, count: 1, sum: 2 }],
        late: [4],
        lateDropped: 0,
        filtered: 0,
      },
    ]);
  });

  it("counts a message behind its closed window in the next result under 'drop', without its value", () => {
    const messages = stream(['a', 5], ['a', 12], ['a', 7], ['a', 25]);
    const results = referenceRun(
      messages,
      config({ type: 'tumbling', size: 10, grace: 0 }, 0, 'drop'),
    );
    expect(
      results.map(({ decision, late, lateDropped }) => ({ decision, late, lateDropped })),
    ).toEqual([
      { decision: 1, late: [], lateDropped: 0 },
      { decision: 3, late: [], lateDropped: 1 },
    ]);
  });

  it('closes a window when the watermark reaches end + grace exactly, and counts a message for it after that late', () => {
    // size 10, grace 2: wm 11 leaves [0, 10) open for t=9; t=12 brings wm to 12 = 10 + 2.
    const tumbling = config({ type: 'tumbling', size: 10, grace: 2 });
    const run = referenceRunDetailed(
      stream(['a', 5], ['a', 11], ['a', 9], ['a', 12], ['a', 9]),
      tumbling,
    );
    expect(run.results).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 0, end: 10, count: 2, sum: 1 + 4 }],
        ...quiet,
      },
    ]);
    expect(run.pending).toEqual({
      firstOffset: 4,
      messages: 1,
      late: [16],
      lateDropped: 0,
      filtered: 0,
    });
  });

  it('adds a message to every hopping window of its time: 3 or 2 of them when the advance 4 does not divide the size 10', () => {
    // t=9: starts 8, 4, 0; t=10: starts 8, 4 ([0, 10) ends before it, open for its grace 5);
    // t=100 closes them all.
    const hopping = config({ type: 'hopping', size: 10, advance: 4, grace: 5 });
    expect(referenceRun(stream(['a', 9], ['a', 10], ['b', 100]), hopping)).toEqual([
      {
        decision: 2,
        firstOffset: 0,
        messages: 3,
        outputs: [
          { key: 'a', start: 0, end: 10, count: 1, sum: 1 },
          { key: 'a', start: 4, end: 14, count: 2, sum: 3 },
          { key: 'a', start: 8, end: 18, count: 2, sum: 3 },
        ],
        ...quiet,
      },
    ]);
  });

  it('adds a message only to its hopping windows that are not closed, without counting it late', () => {
    // wm 12 when t=8 comes: [0, 10) is closed (10 <= 12), [5, 15) is not.
    const hopping = config({ type: 'hopping', size: 10, advance: 5, grace: 0 });
    expect(referenceRun(stream(['a', 12], ['a', 8], ['a', 40]), hopping)).toEqual([
      {
        decision: 2,
        firstOffset: 0,
        messages: 3,
        outputs: [
          { key: 'a', start: 5, end: 15, count: 2, sum: 3 },
          { key: 'a', start: 10, end: 20, count: 1, sum: 1 },
        ],
        ...quiet,
      },
    ]);
  });

  it('merges two sessions of a key into one when a message touches both, exactly at their bounds', () => {
    // gap 5, wm lagging by 10: [0, 5) and [10, 15); t=5 has proto [5, 10], touching the first at
    // its end (5 <= 5) and the second at its start (10 >= 10).
    const sessions = config({ type: 'session', gap: 5, grace: 0 }, 10);
    const run = referenceRunDetailed(stream(['a', 0], ['a', 10], ['a', 5], ['a', 30]), sessions);
    expect(run.sessionMerges).toBe(1);
    expect(run.results).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 0, end: 15, count: 3, sum: 1 + 2 + 4 }],
        ...quiet,
      },
    ]);
    expect(run.open).toEqual([{ key: 'a', start: 30, end: 35, count: 1, sum: 8 }]);
  });

  it('keeps a message exactly one gap after a session in it, and starts a new session one ms later', () => {
    const sessions = config({ type: 'session', gap: 5, grace: 0 }, 100);
    const run = referenceRunDetailed(stream(['a', 0], ['a', 5], ['a', 11]), sessions);
    expect(run.sessionMerges).toBe(0);
    expect(run.open).toEqual([
      { key: 'a', start: 0, end: 10, count: 2, sum: 3 },
      { key: 'a', start: 11, end: 16, count: 1, sum: 4 },
    ]);
  });

  it('joins a message to an open session it touches even behind the watermark, while another key at the same time is late', () => {
    // wm 20 at t=15: proto [15, 20] touches a's [20, 25); b has no session and 15 + 5 <= 20.
    const sessions = config({ type: 'session', gap: 5, grace: 0 });
    const run = referenceRunDetailed(stream(['a', 20], ['a', 15], ['b', 15], ['c', 40]), sessions);
    expect(run.results).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 15, end: 25, count: 2, sum: 3 }],
        late: [4],
        lateDropped: 0,
        filtered: 0,
      },
    ]);
  });

  it('accepts a message out of order within maxOutOfOrderness that would be late without it', () => {
    const messages = stream(['a', 12], ['a', 8], ['a', 14], ['a', 15]);
    // With 5: wm 7 when t=8 comes, [0, 10) is open; t=15 brings wm to 10 and closes it.
    expect(referenceRun(messages, config({ type: 'tumbling', size: 10, grace: 0 }, 5))).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 0, end: 10, count: 1, sum: 2 }],
        ...quiet,
      },
    ]);
    const strict = referenceRunDetailed(messages, config({ type: 'tumbling', size: 10, grace: 0 }));
    expect(strict.results).toEqual([]);
    expect(strict.pending.late).toEqual([2]);
  });

  it('closes a per-key count window at its n-th message, with bounds [min t, max t + 1), not counting filtered messages', () => {
    const counts = config({ type: 'count', n: 2 });
    const messages = stream(['a', 5], ['a', 6, 'filtered'], ['b', 1], ['a', 3], ['b', 9], ['a', 7]);
    const run = referenceRunDetailed(messages, counts);
    expect(run.results).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 3, end: 6, count: 2, sum: 1 + 8 }],
        late: [],
        lateDropped: 0,
        filtered: 1,
      },
      {
        decision: 4,
        firstOffset: 4,
        messages: 1,
        outputs: [{ key: 'b', start: 1, end: 10, count: 2, sum: 4 + 16 }],
        ...quiet,
      },
    ]);
    expect(run.open).toEqual([{ key: 'a', start: 7, end: 8, count: 1, sum: 32 }]);
  });

  it('publishes the windows closing at one message sorted by end, then start, then creation order', () => {
    // gap 10: z [5, 15) created first, a [0, 10) -> [0, 15), y [5, 15), e [2, 12); t=100 closes all.
    const sessions = config({ type: 'session', gap: 10, grace: 0 });
    const messages = stream(['z', 5], ['a', 0], ['y', 5], ['e', 2], ['a', 5], ['q', 100]);
    expect(referenceRun(messages, sessions)).toEqual([
      {
        decision: 5,
        firstOffset: 0,
        messages: 6,
        outputs: [
          { key: 'e', start: 2, end: 12, count: 1, sum: 8 },
          { key: 'a', start: 0, end: 15, count: 2, sum: 2 + 16 },
          { key: 'z', start: 5, end: 15, count: 1, sum: 1 },
          { key: 'y', start: 5, end: 15, count: 1, sum: 4 },
        ],
        ...quiet,
      },
    ]);
  });

  it('gives a session merged from two the creation order of the older one', () => {
    // gap 5, wm lagging by 100: y's [0, 5) is created before x's session, y's [10, 15) after;
    // t=5 bridges y's two into [0, 15), the bounds x's session grew to.
    const sessions = config({ type: 'session', gap: 5, grace: 0 }, 100);
    const messages = stream(
      ['y', 0],
      ['x', 0],
      ['x', 5],
      ['x', 10],
      ['y', 10],
      ['y', 5],
      ['q', 200],
    );
    expect(referenceRun(messages, sessions)).toEqual([
      {
        decision: 6,
        firstOffset: 0,
        messages: 7,
        outputs: [
          { key: 'y', start: 0, end: 15, count: 3, sum: 1 + 16 + 32 },
          { key: 'x', start: 0, end: 15, count: 3, sum: 2 + 4 + 8 },
        ],
        ...quiet,
      },
    ]);
  });

  it('counts filtered messages in the next result only: they move no watermark and join no window', () => {
    // The filtered t=50 would close [0, 10) if it moved the watermark; t=7 then joins it.
    const messages = stream(['a', 5], ['a', 50, 'filtered'], ['a', 7], ['a', 12], ['a', 25]);
    const results = referenceRun(messages, config({ type: 'tumbling', size: 10, grace: 0 }));
    expect(results).toEqual([
      {
        decision: 3,
        firstOffset: 0,
        messages: 4,
        outputs: [{ key: 'a', start: 0, end: 10, count: 2, sum: 1 + 4 }],
        late: [],
        lateDropped: 0,
        filtered: 1,
      },
      {
        decision: 4,
        firstOffset: 4,
        messages: 1,
        outputs: [{ key: 'a', start: 10, end: 20, count: 1, sum: 8 }],
        ...quiet,
      },
    ]);
    expect(results.reduce((n, r) => n + r.messages, 0)).toBe(messages.length);
  });

  it('publishes nothing for windows still open at the end of the input', () => {
    const run = referenceRunDetailed(
      stream(['a', 1], ['b', 2], ['a', 9]),
      config({ type: 'tumbling', size: 10, grace: 0 }),
    );
    expect(run.results).toEqual([]);
    expect(run.open.map((w) => [w.key, w.count])).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
    expect(run.pending.messages).toBe(3);
  });

  it('refuses offsets that are not consecutive from 0, and a hopping advance above its size', () => {
    const tumbling = config({ type: 'tumbling', size: 10, grace: 0 });
    expect(() => referenceRun([{ offset: 1, key: 'a', time: 0, value: 1 }], tumbling)).toThrow(
      'offsets must be consecutive from 0: message 0 has 1',
    );
    expect(() =>
      referenceRun([], config({ type: 'hopping', size: 5, advance: 10, grace: 0 })),
    ).toThrow('advance must be <= size, given: 10 > 5');
  });
});
