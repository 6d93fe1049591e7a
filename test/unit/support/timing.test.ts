import { describe, expect, it } from 'vitest';
import { timeScale } from '../../support/timing.js';

describe('TEST_TIME_SCALE', () => {
  it('is 1 when unset or empty, and the number given otherwise', () => {
    expect(timeScale(undefined)).toBe(1);
    expect(timeScale('')).toBe(1);
    expect(timeScale('2')).toBe(2);
    expect(timeScale('1.5')).toBe(1.5);
  });

  it.each(['0.5', '0', '-1', 'fast', 'Infinity', 'NaN'])(
    "refuses '%s', naming the variable and the rule",
    (given) => {
      expect(() => timeScale(given)).toThrow(
        `TEST_TIME_SCALE must be a number >= 1, given: '${given}'`,
      );
    },
  );
});
