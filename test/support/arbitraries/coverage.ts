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
 * fast-check parameters for a property: `PROPERTY_RUNS` runs, and a fixed seed when
 * `PROPERTY_SEED` is set (mutation testing pins it, so each mutant meets the same cases).
 */
export function propertyParameters(): { numRuns: number; seed?: number } {
  const seed = process.env.PROPERTY_SEED;
  return seed === undefined
    ? { numRuns: PROPERTY_RUNS }
    : { numRuns: PROPERTY_RUNS, seed: Number(seed) };
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
   * Fails unless each of `labels` was counted at least once: for cases too rare per run for
   * a rate's floor over the runs made (each fault point of a few costly runs, say).
   */
  expectSeen(labels: readonly string[]): void {
    const unseen = labels.filter((label) => (this.counts.get(label) ?? 0) === 0);
    expect(unseen, `cases never seen in '${this.property}'`).toEqual([]);
  }

  /**
   * Prints every figure, then fails unless each label of `rates` was counted at least its
   * floor: `rate` is a conservative expectation of occurrences per run (above 1 for events
   * that happen several times a run), and the floor is `rate * runs` less four standard
   * deviations, so that chance alone does not fail a sound generator (binomial for a label
   * counted at most once a run; twice the Poisson variance for one counted more often, as
   * the counts of one run cluster), while one that stops producing a case, or produces it a
   * fraction as often, does fail.
   */
  expectRates(rates: Readonly<Record<string, number>>): void {
    const figures = [...new Set([...Object.keys(rates), ...this.counts.keys()])]
      .sort()
      .map((label) => `${label}=${this.counts.get(label) ?? 0}`);
    console.log(`coverage of '${this.property}' over ${this.runs} runs: ${figures.join(', ')}`);
    const unmet = Object.entries(rates)
      .map(([label, rate]) => ({
        label,
        floor: this.floor(label, rate),
        seen: this.counts.get(label) ?? 0,
      }))
      .filter(({ floor, seen }) => seen < floor)
      .map(({ label, floor, seen }) => `${label}: ${seen} < ${floor}`);
    expect(unmet, `coverage floors not met in '${this.property}'`).toEqual([]);
  }

  private floor(label: string, rate: number): number {
    const mean = rate * this.runs;
    const variance = this.repeated.has(label) || rate > 1 ? 2 * mean : mean * (1 - rate);
    return Math.max(0, Math.ceil(mean - 4 * Math.sqrt(variance)));
  }
}
