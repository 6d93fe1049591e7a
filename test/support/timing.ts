// The one factor every bound of the tests is scaled by, so that a slower or busier machine
// than an idle two-core one needs one setting, not an edit per test.
//
// A bound is how long the test waits for something that must happen (a child to exit, a
// broker to answer, a job to catch up); a test waits on the condition itself and fails only
// when the bound passes. Values that provoke a behaviour (a confirm timeout of 300 ms that a
// test wants to see fire) are not bounds and are not scaled.

/**
 * `TEST_TIME_SCALE` (default 1): how many times longer than the figures written in the tests
 * a bound may last. The figures already hold on this machine at a load average of 10.
 */
export const TIME_SCALE = timeScale(process.env.TEST_TIME_SCALE);

/** `ms` scaled by `TIME_SCALE`: a bound on a wait. */
export function bound(ms: number): number {
  return Math.ceil(ms * TIME_SCALE);
}

/** The factor `TEST_TIME_SCALE` sets; a value that is not a number >= 1 stops the run. */
export function timeScale(given: string | undefined): number {
  if (given === undefined || given === '') return 1;
  const scale = Number(given);
  if (!Number.isFinite(scale) || scale < 1) {
    throw new Error(`TEST_TIME_SCALE must be a number >= 1, given: '${given}'`);
  }
  return scale;
}
