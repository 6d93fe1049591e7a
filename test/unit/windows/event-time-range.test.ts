import { describe, expect, it } from 'vitest';
import { count, hopping, session, tumbling, type Duration } from '../../../src/windows/index.js';
import {
  eventTimeWindowRange,
  MAX_EVENT_TIME,
  stepWindowRange,
} from '../../../src/windows/event-time-range.js';

// At the top of Date's range, per window kind: which event times a job takes. A window the
// watermark closes needs end + grace + maxOutOfOrderness < 8.64e15, as no event time a time
// window takes reaches 8.64e15; a window closed otherwise (a step's, a count's) may end at it.

const M = MAX_EVENT_TIME;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Which of `times` the range takes. */
const taken = (range: { takes: (time: number) => boolean }, times: readonly number[]) =>
  times.map((time) => range.takes(time));

describe('the event-time range at the top of the range of Date', () => {
  it("refuses a tumbling time whose window ends at 8.64e15, the watermark's reach (issue 27)", () => {
    const range = eventTimeWindowRange(tumbling('1h', { grace: 0 }), 0);
    // The last window it takes is [M - 2h, M - 1h): an event time of [M - 1h, M - 1] closes it.
    expect(taken(range, [M - HOUR - 1, M - HOUR, M - 1, M])).toEqual([true, false, false, false]);
  });

  it('moves that edge back by the grace and the maxOutOfOrderness', () => {
    const graced = eventTimeWindowRange(tumbling('1h', { grace: '30m' }), 0);
    expect(taken(graced, [M - HOUR - 1, M - HOUR])).toEqual([true, false]);
    const disordered = eventTimeWindowRange(tumbling('1h', { grace: '30m' }), 30 * MINUTE);
    expect(taken(disordered, [M - 2 * HOUR - 1, M - 2 * HOUR])).toEqual([true, false]);
  });

  it('refuses a hopping time one of whose windows ends at the edge', () => {
    const range = eventTimeWindowRange(hopping('2h', '1h', { grace: 0 }), 0);
    // M - 2h - 1 is in [M - 4h, M - 2h) and [M - 3h, M - 1h); M - 2h is in [M - 2h, M) too.
    expect(taken(range, [M - 2 * HOUR - 1, M - 2 * HOUR])).toEqual([true, false]);
  });

  it('refuses a session time whose gap reaches the edge', () => {
    const range = eventTimeWindowRange(session('1m', { grace: 0 }), 0);
    expect(taken(range, [M - MINUTE - 1, M - MINUTE])).toEqual([true, false]);
    const graced = eventTimeWindowRange(session('1m', { grace: '24h' }), 0);
    expect(taken(graced, [M - DAY - MINUTE - 1, M - DAY - MINUTE])).toEqual([true, false]);
  });

  it('refuses a calendar day whose end + grace reaches the edge, in a time zone too', () => {
    const utc = eventTimeWindowRange(tumbling('1d', { grace: 0 }), 0);
    expect(taken(utc, [M - DAY - 1, M - DAY, M - 1])).toEqual([true, false, false]);
    // 8.64e15 is 05:30 in Kolkata; date-fns gives no end for the day holding it (the next
    // midnight is past the range), so the last day it takes ends at 00:00 local, M - 29.5h.
    const kolkata = (grace: Duration) =>
      eventTimeWindowRange(tumbling('1d', { grace, timeZone: 'Asia/Kolkata' }), 0);
    const lastDayEnd = M - 29.5 * HOUR;
    expect(taken(kolkata('29h'), [lastDayEnd - 1, lastDayEnd])).toEqual([true, false]);
    expect(taken(kolkata('30h'), [lastDayEnd - 1, lastDayEnd - DAY - 1])).toEqual([false, true]);
  });

  it('takes a time whose window ends at 8.64e15 when no watermark closes it: steps, counts', () => {
    expect(taken(stepWindowRange(tumbling('1h')), [M - 1, M])).toEqual([true, false]);
    expect(taken(stepWindowRange(session('1m')), [M - MINUTE, M - MINUTE + 1])).toEqual([
      true,
      false,
    ]);
    const perKey = eventTimeWindowRange(count(3, { perKey: true }), 0);
    expect(taken(perKey, [M - 1, M])).toEqual([true, false]);
  });

  it('says the rule it refuses by, with the edge of the job', () => {
    expect(eventTimeWindowRange(tumbling('1h', { grace: '1s' }), 500).rule).toBe(
      'cannot be represented or closed: every window must lie within ±8640000000000000 ms ' +
        '(the range of Date), and end before 8640000000000000 − grace − maxOutOfOrderness = ' +
        '8639999999998500, so that the watermark can pass it',
    );
    expect(stepWindowRange(tumbling('1h')).rule).toBe(
      'cannot be represented: every window must lie within ±8640000000000000 ms (the range of Date)',
    );
  });
});
