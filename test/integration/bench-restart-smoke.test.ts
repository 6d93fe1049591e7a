import { describe, expect, inject, it } from 'vitest';
import { restartCases } from '../../bench/restart.js';

// The restart bench case (bench/restart.ts) at a tiny size against the real broker, so that it
// keeps building and running. Nothing here asserts a timing: figures at this size mean nothing.
describe('bench smoke, restart', () => {
  it('restarts an event-time job whose hint holds its last result, at each distance', async () => {
    const results = await restartCases(inject('rabbitmqUrl'), 1, [0, 50]);
    expect(results.map((result) => result.name)).toEqual([
      'restart/0-after',
      'restart/50-after',
      'restart/50-after-without-hint',
    ]);
    for (const result of results) {
      expect(result.values?.hintHeldResult).toBe(result.name.endsWith('hint') ? undefined : 1);
      expect(result.values?.minMs).toBeLessThanOrEqual(result.values?.maxMs ?? 0);
      expect(Number.isFinite(result.values?.ms)).toBe(true);
    }
  }, 120_000);
});
