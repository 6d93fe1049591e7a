// What a property test's generated cases actually exercised, counted across its runs, so
// that a generator change cannot quietly weaken the test: each property prints its figures
// (one line) and fails when a case it exists for comes up too rarely.
import { expect } from 'vitest';
import { bound } from '../timing.js';

/** The number of runs every property test makes; `PROPERTY_RUNS` overrides it. */
export const PROPERTY_RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** Time allowed to a whole property (all its runs) on a busy two-core machine. */
export const PROPERTY_TIMEOUT_MS = bound(300_000);

/**
 * fast-check parameters for a property: `PROPERTY_RUNS` runs (or `ownRuns`, those of a costly
 * property, unless `PROPERTY_RUNS` is set), and a fixed seed when `PROPERTY_SEED` is set
 * (mutation testing sets both, so each mutant meets the same few cases).
 */
export function propertyParameters(ownRuns?: number): { numRuns: number; seed?: number } {
  const numRuns =
    process.env.PROPERTY_RUNS === undefined ? (ownRuns ?? PROPERTY_RUNS) : PROPERTY_RUNS;
  const seed = process.env.PROPERTY_SEED;
  return seed === undefined ? { numRuns } : { numRuns, seed: Number(seed) };
}

export class Coverage {
  private readonly counts = new Map<string, number>();
  /** Counts of the run under way, to tell labels counted at most once a run from the others. */
  private readonly thisRun = new Map<string, number>();
  private readonly repeated = new Set<string>();
  private runs = 0;

  constructor(private readonly property: string) {}

  /** Call once at the start of each run of the property. */
  run(): void {
    this.runs++;
    this.thisRun.clear();
  }

  /** Counts one occurrence of `label` (when `happened`). */
  count(label: string, happened = true): void {
    if (happened) this.add(label, 1);
  }

  /** Adds `n` occurrences of `label`, e.g. the results of one run. */
  add(label: string, n: number): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
    const thisRun = (this.thisRun.get(label) ?? 0) + n;
    this.thisRun.set(label, thisRun);
    if (thisRun > 1) this.repeated.add(label);
  }

  /** Runs started so far: a property cut short by a time limit may have made few. */
  get runsMade(): number {
    return this.runs;
  }

  /**
   * Prints every figure, then fails unless each label of `rates` was counted at least its
   * floor (`coverageFloor`): `rate` is a conservative expectation of occurrences per run
   * (above 1 for events that happen several times a run), so that a generator that stops
   * producing a case, or produces it a fraction as often, fails, while chance alone does not.
   */
  expectRates(rates: Readonly<Record<string, number>>): void {
    const figures = [...new Set([...Object.keys(rates), ...this.counts.keys()])]
      .sort()
      .map((label) => `${label}=${this.counts.get(label) ?? 0}`);
    console.log(`coverage of '${this.property}' over ${this.runs} runs: ${figures.join(', ')}`);
    const unmet = Object.entries(rates)
      .map(([label, rate]) => ({
        label,
        floor: coverageFloor(rate, this.runs, !this.repeated.has(label)),
        seen: this.counts.get(label) ?? 0,
      }))
      .filter(({ floor, seen }) => seen < floor)
      .map(({ label, floor, seen }) => `${label}: ${seen} < ${floor}`);
    expect(unmet, `coverage floors not met in '${this.property}'`).toEqual([]);
  }
}

/**
 * One-sided chance, beyond four standard deviations, that a floor fails a sound generator.
 */
const RISK = 3.2e-5;

/**
 * The least count of a label expected `rate` times a run that chance alone does not go below
 * over `runs` runs: the expected count less four standard deviations (binomial for a label
 * counted at most once a run; twice the Poisson variance for one counted more often, as the
 * counts of one run cluster). A case too rare for that to demand anything is still demanded
 * once when never meeting it over the runs is as unlikely, and not at all when it is not (a
 * rare case over the few runs of a mutation test), so that a floor never exceeds what the
 * runs made can promise.
 */
export function coverageFloor(rate: number, runs: number, oncePerRun: boolean): number {
  const mean = rate * runs;
  if (!oncePerRun || rate > 1) return Math.max(0, Math.ceil(mean - 4 * Math.sqrt(2 * mean)));
  const floor = Math.max(0, Math.ceil(mean - 4 * Math.sqrt(mean * (1 - rate))));
  return floor === 0 && (1 - rate) ** runs <= RISK ? 1 : floor;
}
