import { expect } from 'vitest';
import { ratioFigure } from '../../../bench/ratio-changes.js';
import type { CaseResult } from '../../../bench/report.js';

/**
 * Every ratio of `results` comes with the min–max of its rounds (`<ratio>Min`, `<ratio>Max`):
 * without them a run's comparison with bench/results/latest.json cannot judge the ratio.
 */
export function expectRatioRanges(results: readonly (CaseResult | undefined)[]): void {
  for (const result of results) {
    for (const ratio of Object.keys(result?.ratios ?? {})) {
      const { min, max } = result === undefined ? {} : ratioFigure(result, ratio);
      const where = `${result?.name ?? ''}: ${ratio}`;
      expect({ where, min: typeof min, max: typeof max }).toEqual({
        where,
        min: 'number',
        max: 'number',
      });
      expect(min, where).toBeLessThanOrEqual(max ?? Number.NaN);
    }
  }
}
