import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { formatDuration, parseDuration, parseWindowSize } from '../../../src/windows/duration.js';
import { thrown } from './drive.js';

describe('durations', () => {
  it('should parse milliseconds, seconds, minutes and hours', () => {
    expect(parseDuration('gap', '250ms')).toBe(250);
    expect(parseDuration('gap', '30s')).toBe(30_000);
    expect(parseDuration('gap', '1m')).toBe(60_000);
    expect(parseDuration('gap', '1h')).toBe(3_600_000);
    expect(parseDuration('gap', '48h')).toBe(172_800_000);
  });

  it('should take a plain positive number as milliseconds', () => {
    expect(parseDuration('gap', 1500)).toBe(1500);
  });

  it('should accept zero only where the parameter allows it', () => {
    expect(parseDuration('offset', '0s', 'non-negative')).toBe(0);
    expect(parseDuration('offset', -0, 'non-negative')).toBe(0);
    expect(thrown(() => parseDuration('offset', '-1s', 'non-negative')).message).toBe(
      "offset must be >= 0, given: '-1s'",
    );
  });

  it.each([
    [0, 'gap must be > 0, given: 0'],
    ['0s', "gap must be > 0, given: '0s'"],
    [-5, 'gap must be > 0, given: -5'],
    ['-5s', "gap must be > 0, given: '-5s'"],
    [1.5, 'gap must be a whole number of milliseconds, given: 1.5'],
    [
      2 ** 60,
      `gap must be at most 100000000000000ms (about 3,000 years), so that window bounds stay exact, given: ${2 ** 60}`,
    ],
  ])('should reject %s naming the parameter, the rule and the value', (given, message) => {
    const error = thrown(() => parseDuration('gap', given));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(message);
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY])(
    'should reject the non-finite number %s',
    (given) => {
      const error = thrown(() => parseDuration('gap', given));
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toMatchObject({ parameter: 'gap', given });
      expect(error.message).toContain('gap must be a finite number of milliseconds');
    },
  );

  it.each(['soon', '', '1 m', '1M', '1.5h', 'm', '1hour', '1h30m'])(
    'should reject the garbage string %j and list the accepted forms',
    (given) => {
      expect(thrown(() => parseDuration('gap', given)).message).toBe(
        `gap must be a whole number (no leading zero) with a unit ms, s, m or h (e.g. '250ms', '30s', '1m', '1h') ` +
          `or a number of milliseconds, given: '${given}'`,
      );
    },
  );

  it.each([null, undefined, {}, true])('should reject the non-duration %j', (given) => {
    expect(thrown(() => parseDuration('gap', given))).toMatchObject({ parameter: 'gap' });
  });

  it('should reject calendar units in fixed durations and suggest hours', () => {
    const message = thrown(() => parseDuration('session gap', '1d')).message;
    expect(message).toContain('session gap must be a fixed duration');
    expect(message).toContain("'24h'");
    expect(message).toContain("given: '1d'");
  });

  it('should format milliseconds in the largest exact unit', () => {
    expect(formatDuration(3_600_000)).toBe('1h');
    expect(formatDuration(90_000)).toBe('90s');
    expect(formatDuration(120_000)).toBe('2m');
    expect(formatDuration(1500)).toBe('1500ms');
    expect(formatDuration(0)).toBe('0ms');
  });
});

describe('window sizes', () => {
  it('should parse fixed sizes as milliseconds', () => {
    expect(parseWindowSize('size', '2h')).toEqual({ type: 'fixed', ms: 7_200_000 });
    expect(parseWindowSize('size', 250)).toEqual({ type: 'fixed', ms: 250 });
  });

  it('should parse one day, week or month as a calendar unit', () => {
    expect(parseWindowSize('size', '1d')).toEqual({ type: 'calendar', unit: 'day' });
    expect(parseWindowSize('size', '1w')).toEqual({ type: 'calendar', unit: 'week' });
    expect(parseWindowSize('size', '1mo')).toEqual({ type: 'calendar', unit: 'month' });
  });

  it('should reject calendar multiples and suggest a fixed size in hours', () => {
    const message = thrown(() => parseWindowSize('tumbling size', '2d')).message;
    expect(message).toContain('tumbling size with a calendar unit must be exactly one unit');
    expect(message).toContain("'48h'");
    expect(message).toContain("given: '2d'");
  });

  it('should reject zero calendar units as not positive', () => {
    expect(thrown(() => parseWindowSize('tumbling size', '0mo')).message).toBe(
      "tumbling size must be > 0, given: '0mo'",
    );
  });
});
