import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { count, Placement, TriggerResult } from '../../../src/windows/index.js';
import { drive, thrown } from './drive.js';

describe('count windows', () => {
  it('should make every element its own step with count(1)', () => {
    const { fired, open } = drive(count(1), [5, 3, 3]);
    expect(fired).toEqual([
      { times: [5], start: 5, end: 6 },
      { times: [3], start: 3, end: 4 },
      { times: [3], start: 3, end: 4 },
    ]);
    expect(open).toBeUndefined();
  });

  it('should fire at the n-th element and start counting again after a clear', () => {
    const trigger = count(3).createTrigger();
    expect([trigger.onElement(), trigger.onElement(), trigger.onElement()]).toEqual([
      TriggerResult.Continue,
      TriggerResult.Continue,
      TriggerResult.FireAndPurge,
    ]);
    trigger.clear();
    expect(trigger.onElement()).toBe(TriggerResult.Continue);
  });

  it('should bound each step by its earliest and latest event time, end exclusive', () => {
    const { fired, open } = drive(count(3), [100, 40, 250, 7, 9]);
    expect(fired).toEqual([{ times: [100, 40, 250], start: 40, end: 251 }]);
    expect(open).toEqual({ times: [7, 9], start: 7, end: 10 });
  });

  it('should place every element inside, however far back in event time', () => {
    const spec = count(2);
    expect(spec.hasEventTimeBounds).toBe(false);
    const assigner = spec.createAssigner();
    assigner.open(1_000_000);
    expect(assigner.place(-1_000_000)).toBe(Placement.Inside);
    expect(assigner.place(Number.MAX_SAFE_INTEGER)).toBe(Placement.Inside);
  });

  it('should describe its settings', () => {
    expect(count(100).kind).toBe('count');
    expect(count(100).describe()).toBe('count(100)');
  });

  it.each([
    [0, 'count n must be > 0, given: 0'],
    [-3, 'count n must be > 0, given: -3'],
    [1.5, 'count n must be a whole number, given: 1.5'],
    [2 ** 60, `count n must be at most ${Number.MAX_SAFE_INTEGER}, given: ${2 ** 60}`],
    ['3', "count n must be a number, given: '3'"],
  ])('should reject %j naming the parameter, the rule and the value', (n, message) => {
    const error = thrown(() => count(n as number));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toBe(message);
  });

  it('should reject NaN naming the parameter', () => {
    expect(thrown(() => count(Number.NaN))).toMatchObject({
      parameter: 'count n',
      given: Number.NaN,
      message: expect.stringContaining('count n must be a whole number'),
    });
  });
});
