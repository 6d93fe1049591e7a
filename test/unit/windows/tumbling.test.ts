import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import {
  Placement,
  TriggerResult,
  tumbling,
  type TumblingOptions,
  type TumblingSize,
} from '../../../src/windows/index.js';
import { drive, thrown, untyped } from './drive.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

function windowOf(size: TumblingSize, t: number, options?: TumblingOptions) {
  const assigner = tumbling(size, options).createAssigner();
  assigner.open(t);
  return assigner.snapshot();
}

describe('fixed tumbling windows', () => {
  it('should align windows to the epoch', () => {
    const t = Date.parse('2024-05-01T10:17:42.123Z');
    expect(windowOf('1m', t)).toEqual({
      start: Date.parse('2024-05-01T10:17:00Z'),
      end: Date.parse('2024-05-01T10:18:00Z'),
    });
    expect(windowOf('2h', t)).toEqual({
      start: Date.parse('2024-05-01T10:00:00Z'),
      end: Date.parse('2024-05-01T12:00:00Z'),
    });
    expect(windowOf('250ms', t)).toEqual({ start: t - 123, end: t - 123 + 250 });
  });

  it('should place an element at the start inside and one exactly at the end in a later window', () => {
    const assigner = tumbling('1m').createAssigner();
    assigner.open(90_000);
    expect(assigner.snapshot()).toEqual({ start: MINUTE, end: 2 * MINUTE });
    expect(assigner.place(MINUTE)).toBe(Placement.Inside);
    expect(assigner.place(2 * MINUTE - 1)).toBe(Placement.Inside);
    expect(assigner.place(2 * MINUTE)).toBe(Placement.Later);
    expect(assigner.place(MINUTE - 1)).toBe(Placement.Late);
  });

  it('should floor negative epoch times into the window before zero', () => {
    expect(windowOf('1m', -1)).toEqual({ start: -MINUTE, end: 0 });
    expect(windowOf('1m', -MINUTE)).toEqual({ start: -MINUTE, end: 0 });
    expect(windowOf('1m', -MINUTE - 1)).toEqual({ start: -2 * MINUTE, end: -MINUTE });
    expect(windowOf('1m', 0)).toEqual({ start: 0, end: MINUTE });
  });

  it('should shift windows by the offset', () => {
    const t = Date.parse('2024-05-01T10:14:59Z');
    expect(windowOf('1h', t, { offset: '15m' })).toEqual({
      start: Date.parse('2024-05-01T09:15:00Z'),
      end: Date.parse('2024-05-01T10:15:00Z'),
    });
    expect(windowOf('1h', t + 1000, { offset: '15m' }).start).toBe(
      Date.parse('2024-05-01T10:15:00Z'),
    );
    expect(windowOf('1h', -1, { offset: '15m' })).toEqual({
      start: -45 * MINUTE,
      end: 15 * MINUTE,
    });
  });

  it('should end a step before the first element of a later window', () => {
    const { fired, open } = drive(tumbling('1m'), [0, 59_999, 60_000, 61_000, 185_000]);
    expect(fired).toEqual([
      { times: [0, 59_999], start: 0, end: MINUTE },
      { times: [60_000, 61_000], start: MINUTE, end: 2 * MINUTE },
    ]);
    expect(open).toEqual({ times: [185_000], start: 3 * MINUTE, end: 4 * MINUTE });
  });

  it('should leave the window unchanged when a late element is included', () => {
    const included = drive(tumbling('1m'), [60_000, 59_000, 70_000], 'include');
    expect(included.late).toEqual([59_000]);
    expect(included.open).toEqual({
      times: [60_000, 59_000, 70_000],
      start: MINUTE,
      end: 2 * MINUTE,
    });
    const dropped = drive(tumbling('1m'), [60_000, 59_000, 70_000], 'drop');
    expect(dropped.open).toEqual({ times: [60_000, 70_000], start: MINUTE, end: 2 * MINUTE });
  });

  it('should never fire on its own', () => {
    const trigger = tumbling('1m').createTrigger();
    for (let i = 0; i < 1000; i++) expect(trigger.onElement()).toBe(TriggerResult.Continue);
  });

  it('should describe its settings', () => {
    const spec = tumbling('60s', { offset: 15_000 });
    expect(spec.kind).toBe('tumbling');
    expect(spec.hasEventTimeBounds).toBe(true);
    expect(spec.describe()).toBe('tumbling(1m, offset=15s)');
    expect(tumbling(1500).describe()).toBe('tumbling(1500ms)');
  });

  it.each([
    ['0s', {}, "tumbling size must be > 0, given: '0s'"],
    [-1000, {}, 'tumbling size must be > 0, given: -1000'],
    ['-1m', {}, "tumbling size must be > 0, given: '-1m'"],
    ['1h', { offset: '1h' }, "tumbling offset must be less than the size (1h), given: '1h'"],
    ['1h', { offset: '-5m' }, "tumbling offset must be >= 0, given: '-5m'"],
    [
      '1h',
      { timeZone: 'Europe/Berlin' },
      "tumbling timeZone applies only to calendar sizes ('1d', '1w', '1mo'); fixed sizes align " +
        "to the epoch in UTC, shift them with offset, given: 'Europe/Berlin'",
    ],
    ['1d', { weekStartsOn: 0 }, "tumbling weekStartsOn applies only to the size '1w', given: 0"],
  ] as const)('should reject size %j with %j', (size, options, message) => {
    const error = thrown(() => tumbling(untyped(size), options as TumblingOptions));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(message);
  });

  it('should reject a NaN size naming the parameter', () => {
    expect(thrown(() => tumbling(Number.NaN))).toMatchObject({
      parameter: 'tumbling size',
      message: expect.stringContaining('must be a finite number of milliseconds'),
    });
  });

  it('should reject a garbage size listing the accepted forms', () => {
    expect(thrown(() => tumbling(untyped('one minute'))).message).toMatch(
      /^tumbling size must be a whole number \(no leading zero\) with a unit .*, given: 'one minute'$/,
    );
  });

  it('should compute exact hour windows far from the epoch', () => {
    const t = 8.64e15 - 1; // the last millisecond a Date can represent
    const { start, end } = windowOf('1h', t);
    expect(end - start).toBe(HOUR);
    expect(start % HOUR).toBe(0);
    expect(start <= t && t < end).toBe(true);
  });
});
