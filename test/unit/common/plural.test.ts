import { describe, expect, it } from 'vitest';
import { counted } from '../../../src/common/plural.js';

describe('counted', () => {
  it('should give one thing the singular and any other count the plural', () => {
    expect([0, 1, 2, 1n, 3n].map((n) => counted(n, 'result'))).toEqual([
      '0 results',
      '1 result',
      '2 results',
      '1 result',
      '3 results',
    ]);
    expect(counted(1, 'entry', 'entries')).toBe('1 entry');
    expect(counted(2, 'entry', 'entries')).toBe('2 entries');
  });
});
