import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { MAX_TIMER_MS, timerMs } from '../../../src/common/timer-duration.js';

describe('timerMs', () => {
  it('returns a positive finite delay unchanged', () => {
    expect(timerMs('confirmTimeoutMs', 250)).toBe(250);
    expect(timerMs('confirmTimeoutMs', MAX_TIMER_MS)).toBe(MAX_TIMER_MS);
  });

  it.each([Infinity, 3e9, MAX_TIMER_MS + 1, NaN, 0, -1, '5s', undefined])(
    'refuses %s with the rule and the value',
    (value) => {
      expect(() => timerMs('confirmTimeoutMs', value)).toThrow(ConfigError);
      expect(() => timerMs('confirmTimeoutMs', value)).toThrow(/^confirmTimeoutMs must be .*given/);
    },
  );

  it('takes 0 only where zero is allowed', () => {
    expect(timerMs('retryDelayMs', 0, true)).toBe(0);
    expect(() => timerMs('retryDelayMs', -1, true)).toThrow(
      'retryDelayMs must be >= 0 ms, given: -1',
    );
  });
});
