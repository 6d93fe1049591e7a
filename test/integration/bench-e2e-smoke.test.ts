import { describe, expect, inject, it } from 'vitest';
import { e2eCases } from '../../bench/e2e.js';
import { formatTable } from '../../bench/report.js';

// The e2e bench case at a tiny size against the real broker, so that it keeps building and
// running (test/unit/bench/bench-smoke.test.ts runs the cases that need no broker). Nothing here
// asserts a timing: figures at this size mean nothing.
describe('bench smoke, end to end', () => {
  it('runs the e2e case: the job, its hot path and the consume floors in the same rounds', async () => {
    const [job, discarded] = await e2eCases(3_000, 1, inject('rabbitmqUrl'));

    expect(Object.keys(job?.ratios ?? {})).toEqual([
      'hotPath',
      'processOnly',
      'ownConsume',
      'rawConsume',
    ]);
    for (const name of Object.keys(job?.ratios ?? {})) {
      expect(job?.values?.[`${name}Min`]).toBeLessThanOrEqual(job?.values?.[`${name}Max`] ?? 0);
    }
    expect(job?.values?.resultsPublished).toBe(2);
    expect(discarded?.msgsPerSec).toBeGreaterThan(0);
    expect(discarded?.values?.publishingShareMin).toBeLessThanOrEqual(
      discarded?.values?.publishingShareMax ?? Number.NaN,
    );
    expect(formatTable([job, discarded].flatMap((result) => result ?? []))).toContain(
      'rabbitmq-results-discarded',
    );
  });
});
