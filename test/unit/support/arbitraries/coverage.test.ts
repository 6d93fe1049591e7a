// The rule of a coverage floor (test/support/arbitraries/coverage.ts): honest at any run
// count, so that the few runs of `npm run mutate` demand nothing chance may deny, while the
// default runs still demand every case.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Coverage, coverageFloor } from '../../../support/arbitraries/coverage.js';

/** The one-sided chance beyond four standard deviations, which every floor may risk. */
const FOUR_SIGMA_TAIL = 3.2e-5;

/** P(X < k) for X binomial over `runs` runs of chance `rate`. */
function chanceBelow(k: number, runs: number, rate: number): number {
  let chance = 0;
  let logChoose = 0;
  for (let x = 0; x < k; x++) {
    if (x > 0) logChoose += Math.log(runs - x + 1) - Math.log(x);
    chance += Math.exp(logChoose + x * Math.log(rate) + (runs - x) * Math.log1p(-rate));
  }
  return chance;
}

/** A property's coverage after `runs` runs, counting `label` in the runs `counted` picks. */
function coverageOf(runs: number, label: string, counted: (run: number) => boolean): Coverage {
  const coverage = new Coverage('a property');
  for (let run = 0; run < runs; run++) {
    coverage.run();
    coverage.count(label, counted(run));
  }
  return coverage;
}

describe('coverage floors', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('demand no case a sound generator misses by chance more often than four deviations allow, at any run count', () => {
    const rates = [0.01, 0.03, 0.05, 0.07, 0.1, 0.2, 0.3, 0.4, 0.5];
    const unfair = [1, 2, 5, 10, 15, 20, 30, 50, 100, 200, 300, 1000].flatMap((runs) =>
      rates
        .map((rate) => ({ runs, rate, floor: coverageFloor(rate, runs, true) }))
        .filter(({ runs, rate, floor }) => chanceBelow(floor, runs, rate) > FOUR_SIGMA_TAIL),
    );
    expect(unfair).toEqual([]);
  });

  it('demand a rare case once where missing it is as unlikely, and not where it is not', () => {
    // A tenth of the runs: missed over 15 runs one time in five, over 200 runs never.
    expect(0.9 ** 15).toBeGreaterThan(0.2);
    expect(coverageFloor(0.1, 15, true)).toBe(0);
    expect(0.9 ** 200).toBeLessThan(FOUR_SIGMA_TAIL);
    expect(coverageFloor(0.1, 200, true)).toBeGreaterThanOrEqual(1);
    // Every case expected in at least one run in seventeen is demanded over 200 runs.
    for (const rate of [0.06, 0.07, 0.1, 0.2, 0.5, 0.9, 1]) {
      expect(coverageFloor(rate, 200, true), `rate ${rate}`).toBeGreaterThanOrEqual(1);
    }
  });

  it('still fail, at the default runs, a generator that produces a case a third as often as expected', () => {
    const runs = 200;
    for (const rate of [0.2, 0.3, 0.5, 0.8]) {
      expect(coverageFloor(rate, runs, true), `rate ${rate}`).toBeGreaterThan((rate * runs) / 3);
    }
    for (const rate of [1, 2, 5, 10]) {
      expect(coverageFloor(rate, runs, false), `rate ${rate}`).toBeGreaterThan((rate * runs) / 3);
    }
  });

  it('let a property of few runs pass without a rare case, and fail one of many runs that never met it', () => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const never = (): boolean => false;
    expect(() => {
      coverageOf(15, 'a rare case', never).expectRates({ 'a rare case': 0.07 });
    }).not.toThrow();
    expect(() => {
      coverageOf(200, 'a rare case', never).expectRates({ 'a rare case': 0.07 });
    }).toThrow(/coverage floors not met in 'a property'[\s\S]*a rare case: 0 < 1/);
    expect(() => {
      coverageOf(200, 'a rare case', (run) => run % 14 === 0).expectRates({ 'a rare case': 0.07 });
    }).not.toThrow();
  });
});
