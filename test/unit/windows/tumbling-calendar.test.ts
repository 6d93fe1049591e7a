import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import {
  Placement,
  tumbling,
  type TumblingOptions,
  type TumblingSize,
} from '../../../src/windows/index.js';
import { thrown, untyped } from './drive.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = Date.parse;

function windowOf(size: TumblingSize, iso: string | number, options?: TumblingOptions) {
  const assigner = tumbling(size, options).createAssigner();
  assigner.open(typeof iso === 'number' ? iso : at(iso));
  return assigner.snapshot();
}

describe('calendar tumbling windows', () => {
  it('should align days to midnight UTC by default', () => {
    expect(windowOf('1d', '2024-05-01T13:00:00Z')).toEqual({
      start: at('2024-05-01T00:00:00Z'),
      end: at('2024-05-02T00:00:00Z'),
    });
  });

  it('should align days to local midnight in the time zone', () => {
    expect(windowOf('1d', '2024-05-01T23:30:00Z', { timeZone: 'Europe/Berlin' })).toEqual({
      start: at('2024-05-01T22:00:00Z'),
      end: at('2024-05-02T22:00:00Z'),
    });
  });

  it('should compute a 23-hour day across the spring DST change in Europe/Berlin', () => {
    const { start, end } = windowOf('1d', '2024-03-31T12:00:00Z', { timeZone: 'Europe/Berlin' });
    expect(start).toBe(at('2024-03-31T00:00:00+01:00'));
    expect(end).toBe(at('2024-04-01T00:00:00+02:00'));
    expect(end - start).toBe(23 * HOUR);
  });

  it('should compute a 25-hour day across the autumn DST change in Europe/Berlin', () => {
    const { start, end } = windowOf('1d', '2024-10-27T12:00:00Z', { timeZone: 'Europe/Berlin' });
    expect(start).toBe(at('2024-10-27T00:00:00+02:00'));
    expect(end).toBe(at('2024-10-28T00:00:00+01:00'));
    expect(end - start).toBe(25 * HOUR);
  });

  it('should compute 23- and 25-hour days across the DST changes in America/New_York', () => {
    const options = { timeZone: 'America/New_York' };
    expect(windowOf('1d', '2024-03-10T12:00:00Z', options)).toEqual({
      start: at('2024-03-10T05:00:00Z'),
      end: at('2024-03-11T04:00:00Z'),
    });
    expect(windowOf('1d', '2024-11-03T12:00:00Z', options)).toEqual({
      start: at('2024-11-03T04:00:00Z'),
      end: at('2024-11-04T05:00:00Z'),
    });
  });

  it('should place elements against the cached bounds of a DST day', () => {
    const assigner = tumbling('1d', { timeZone: 'Europe/Berlin' }).createAssigner();
    assigner.open(at('2024-03-31T12:00:00Z'));
    expect(assigner.place(at('2024-03-30T23:00:00Z'))).toBe(Placement.Inside);
    expect(assigner.place(at('2024-03-31T21:59:59.999Z'))).toBe(Placement.Inside);
    expect(assigner.place(at('2024-03-31T22:00:00Z'))).toBe(Placement.Later);
    expect(assigner.place(at('2024-03-30T22:59:59.999Z'))).toBe(Placement.Late);
  });

  it('should start days at the local time of the offset, also on DST days', () => {
    const options: TumblingOptions = { timeZone: 'Europe/Berlin', offset: '6h' };
    // 05:00 local on the spring DST day belongs to the day that started at 06:00 the day before.
    expect(windowOf('1d', '2024-03-31T03:00:00Z', options)).toEqual({
      start: at('2024-03-30T06:00:00+01:00'),
      end: at('2024-03-31T06:00:00+02:00'),
    });
    expect(windowOf('1d', '2024-03-31T04:00:00Z', options)).toEqual({
      start: at('2024-03-31T06:00:00+02:00'),
      end: at('2024-04-01T06:00:00+02:00'),
    });
  });

  it('should move a start that falls into a DST gap forward, keeping windows contiguous', () => {
    const options: TumblingOptions = { timeZone: 'Europe/Berlin', offset: '150m' }; // 02:30 does not exist on 31 March
    const dstDay = windowOf('1d', '2024-03-31T12:00:00Z', options);
    expect(dstDay.start).toBe(at('2024-03-31T03:30:00+02:00'));
    expect(windowOf('1d', dstDay.start - 1, options).end).toBe(dstDay.start);
  });

  it('should align weeks to Monday by default and to the chosen first day', () => {
    const berlin = { timeZone: 'Europe/Berlin' };
    // The week of Monday 25 March 2024 ends at the DST change: 167 hours.
    expect(windowOf('1w', '2024-03-27T12:00:00Z', berlin)).toEqual({
      start: at('2024-03-25T00:00:00+01:00'),
      end: at('2024-04-01T00:00:00+02:00'),
    });
    expect(windowOf('1w', '2024-03-27T12:00:00Z', { ...berlin, weekStartsOn: 0 })).toEqual({
      start: at('2024-03-24T00:00:00+01:00'),
      end: at('2024-03-31T00:00:00+01:00'),
    });
    const fallWeek = windowOf('1w', '2024-11-01T12:00:00Z', { timeZone: 'America/New_York' });
    expect(fallWeek.end - fallWeek.start).toBe(7 * DAY + HOUR);
  });

  it('should follow month lengths, leap years and DST in months', () => {
    expect(windowOf('1mo', '2024-02-10T00:00:00Z')).toEqual({
      start: at('2024-02-01T00:00:00Z'),
      end: at('2024-03-01T00:00:00Z'),
    });
    const feb2023 = windowOf('1mo', '2023-02-28T23:59:59.999Z');
    expect(feb2023.end - feb2023.start).toBe(28 * DAY);
    const april = windowOf('1mo', '2024-04-30T12:00:00Z');
    expect(april.end - april.start).toBe(30 * DAY);
    expect(windowOf('1mo', '2023-12-31T23:00:00Z').end).toBe(at('2024-01-01T00:00:00Z'));
    expect(windowOf('1mo', '2024-03-15T12:00:00Z', { timeZone: 'America/New_York' })).toEqual({
      start: at('2024-03-01T00:00:00-05:00'),
      end: at('2024-04-01T00:00:00-04:00'),
    });
  });

  it('should handle times before the epoch', () => {
    expect(windowOf('1d', -1)).toEqual({ start: -DAY, end: 0 });
    expect(windowOf('1mo', -1)).toEqual({ start: at('1969-12-01T00:00:00Z'), end: 0 });
  });

  it.each([
    ['Europe/Berlin', 0],
    ['America/New_York', 6 * HOUR],
    ['America/Santiago', 0], // DST changes at midnight: some local midnights do not exist
    ['Australia/Lord_Howe', 90 * 60_000], // half-hour DST
  ])(
    'should tile two years of days in %s with offset %d without gaps or overlaps',
    (timeZone, offset) => {
      const assigner = tumbling('1d', { timeZone, offset }).createAssigner();
      let t = at('2023-01-01T12:00:00Z');
      assigner.open(t);
      t = assigner.end;
      for (let day = 0; day < 730; day++) {
        assigner.open(t);
        expect(assigner.start).toBe(t);
        expect(assigner.end - assigner.start).toBeGreaterThanOrEqual(23 * HOUR);
        expect(assigner.end - assigner.start).toBeLessThanOrEqual(25 * HOUR);
        t = assigner.end;
      }
    },
  );

  it('should describe its calendar settings', () => {
    expect(tumbling('1d', { timeZone: 'Europe/Berlin', offset: '6h' }).describe()).toBe(
      'tumbling(1d, tz=Europe/Berlin, offset=6h)',
    );
    expect(tumbling('1w').describe()).toBe('tumbling(1w, tz=UTC, weekStartsOn=1)');
    // Both ends of the range are weeks: Sunday and Saturday.
    expect(tumbling('1w', { weekStartsOn: 0 }).describe()).toBe(
      'tumbling(1w, tz=UTC, weekStartsOn=0)',
    );
    expect(tumbling('1w', { weekStartsOn: 6 }).describe()).toBe(
      'tumbling(1w, tz=UTC, weekStartsOn=6)',
    );
    expect(tumbling('1mo', { timeZone: 'America/New_York' }).describe()).toBe(
      'tumbling(1mo, tz=America/New_York)',
    );
  });

  it.each(['Mars/Olympus', 'Europe/Berln', '', 'CEST+1'])(
    'should reject the unknown time zone %j naming timeZone',
    (timeZone) => {
      const error = thrown(() => tumbling('1d', { timeZone }));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        `tumbling timeZone must be an IANA time zone such as 'Europe/Berlin', given: '${timeZone}'`,
      );
    },
  );

  it('should reject a calendar offset of a whole day or more', () => {
    expect(thrown(() => tumbling('1mo', { offset: '24h' })).message).toBe(
      'tumbling offset must be less than 24h for calendar sizes (it is the local time of day ' +
        "at which each window starts), given: '24h'",
    );
  });

  it.each([7, -1, 1.5])('should reject weekStartsOn %d', (weekStartsOn) => {
    expect(thrown(() => tumbling('1w', { weekStartsOn } as TumblingOptions)).message).toBe(
      `tumbling weekStartsOn must be an integer from 0 (Sunday) to 6 (Saturday), given: ${weekStartsOn}`,
    );
  });

  it.each(['2d', '2w', '3mo'])('should reject the calendar multiple %s', (size) => {
    expect(thrown(() => tumbling(untyped(size))).message).toContain("e.g. '48h'");
  });
});

describe('calendar windows in zones with unusual DST changes', () => {
  // Found by review: a start moved forward by a DST gap, or a next start resolved at or
  // before the element by a fall-back, once gave a window that did not hold its element.
  const cases = [
    { zone: 'America/Nuuk', size: '1d', offset: '1410m', around: '2024-03-31T00:00:00Z' },
    { zone: 'America/St_Johns', size: '1d', offset: 0, around: '2006-10-29T03:00:00Z' },
    { zone: 'America/St_Johns', size: '1mo', offset: 0, around: '2006-10-29T03:00:00Z' },
    { zone: 'Pacific/Apia', size: '1d', offset: 0, around: '2011-12-30T10:00:00Z' },
    { zone: 'Europe/Berlin', size: '1d', offset: '150m', around: '2024-03-31T01:00:00Z' },
  ] as const;

  it.each(cases)(
    'should open a window holding its element and meeting its neighbours in $zone ($size, offset $offset)',
    ({ zone, size, offset, around }) => {
      const assigner = tumbling(size, { timeZone: zone, offset }).createAssigner();
      const centre = Date.parse(around);
      for (let t = centre - 3 * 86_400_000; t < centre + 3 * 86_400_000; t += 5 * 60_000) {
        assigner.open(t);
        const { start, end } = assigner.snapshot();
        expect(start).toBeLessThanOrEqual(t);
        expect(end).toBeGreaterThan(t);
        assigner.open(end); // the next window starts where this one ends
        expect(assigner.snapshot().start).toBe(end);
      }
    },
  );
});
