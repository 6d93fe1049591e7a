import { describe, expect, inject, it } from 'vitest';
import { restartCases } from '../../bench/restart.js';
import { expectRatioRanges } from '../support/bench/ratio-ranges.js';
import { bound } from '../support/timing.js';

// The restart bench case (bench/restart.ts) at a tiny size against the real broker, so that it
// keeps building and running. Nothing here asserts a timing: figures at this size mean nothing.
describe('bench smoke, restart', () => {
  it(
    'restarts an event-time job from its hint, and by default from its time bound, at each distance',
    async () => {
      const results = await restartCases(inject('rabbitmqUrl'), 1, [0, 50]);
      expect(results.map((result) => result.name)).toEqual([
        'restart/0-after',
        'restart/0-after-default',
        'restart/50-after',
        'restart/50-after-default',
      ]);
      for (const result of results) {
        const byDefault = result.name.endsWith('default');
        expect(result.values?.hintHeldResult).toBe(byDefault ? undefined : 1);
        if (byDefault) {
          // Its last result lies before the others' 50: read from the bound, ahead of them.
          expect(result.values?.boundMessagesRead).toBeGreaterThan(0);
        }
        expect(result.values?.minMs).toBeLessThanOrEqual(result.values?.maxMs ?? 0);
        expect(Number.isFinite(result.values?.ms)).toBe(true);
      }
      expectRatioRanges(results);
    },
    bound(120_000),
  );
});
