// Random readings for the sink's properties: a job's results with windows, late values and
// (with a refusing map) dead letters.
import fc from 'fast-check';
import { T0, type Reading } from '../jobs/memory-job.js';

const MINUTE = 60_000;

/** Readings of three sensors over a few minutes, mostly in order, some late; 10 to `maxLength`. */
export function lateReadingsArb(maxLength: number): fc.Arbitrary<Reading[]> {
  return fc
    .array(
      fc.record({
        sensor: fc.constantFrom('a', 'b', 'c'),
        value: fc.integer({ min: 0, max: 100 }),
        step: fc.integer({ min: -40_000, max: 50_000 }),
      }),
      { minLength: 10, maxLength, size: 'max' },
    )
    .map((draws) => {
      let t = T0;
      return draws.map(({ sensor, value, step }) => {
        t = Math.max(T0, t + step);
        return { sensor, value, t: t + (step < -30_000 ? -MINUTE : 0) };
      });
    });
}
