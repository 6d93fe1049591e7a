// What a property test's generated cases actually exercised, counted across its runs, so
// that a generator change cannot quietly weaken the test: each property prints its figures
// (one line) and fails when a case it exists for comes up too rarely.
import { expect } from 'vitest';

/** The number of runs every property test makes; `PROPERTY_RUNS` overrides it. */
export const PROPERTY_RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/** Time allowed to a whole property (all its runs) on a busy two-core machine. */
export const PROPERTY_TIMEOUT_MS = 300_000;

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
  private runs = 0;

  constructor(private readonly property: string) {}

  /** Call once at the start of each run of the property. */
  run(): void {
    this.runs++;
  }

  /** Counts one occurrence of `label` (when `happened`). */
  count(label: string, happened = true): void {
    if (happened) this.add(label, 1);
  }

  /** Adds `n` occurrences of `label`, e.g. the results of one run. */
  add(label: string, n: number): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + n);
  }

  /**
   * Prints every figure, then fails unless each label of `floors` was counted at least
   * `fraction * runs` times (and at least once): a fraction above 1 asks for several
   * occurrences per run on average.
   */
  expectFloors(floors: Readonly<Record<string, number>>): void {
    const figures = [...new Set([...Object.keys(floors), ...this.counts.keys()])]
      .sort()
      .map((label) => `${label}=${this.counts.get(label) ?? 0}`);
    console.log(`coverage of '${this.property}' over ${this.runs} runs: ${figures.join(', ')}`);
    const unmet = Object.entries(floors)
      .map(([label, fraction]) => ({
        label,
        floor: Math.max(1, Math.ceil(fraction * this.runs)),
        seen: this.counts.get(label) ?? 0,
      }))
      .filter(({ floor, seen }) => seen < floor)
      .map(({ label, floor, seen }) => `${label}: ${seen} < ${floor}`);
    expect(unmet, `coverage floors not met in '${this.property}'`).toEqual([]);
  }
}
