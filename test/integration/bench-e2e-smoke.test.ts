import { describe, expect, inject, it } from 'vitest';
import { e2eCases } from '../../bench/e2e.js';
import { formatTable, verdicts } from '../../bench/report.js';

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
    // CPU per message of the job and of its parts, in the same rounds; the broker's, or why not.
    for (const name of [
      'cpuUsPerMsg',
      'hotPathCpuUsPerMsg',
      'ownConsumeCpuUsPerMsg',
      'cpuOverParts',
    ]) {
      expect(job?.values?.[name]).toBeGreaterThan(0);
      expect(job?.values?.[`${name}Min`]).toBeLessThanOrEqual(job?.values?.[`${name}Max`] ?? 0);
    }
    expect(discarded?.values?.cpuOverParts).toBeGreaterThan(0);
    // The same job on the embedded broker holding the same chunks: the Runner without a socket.
    expect(discarded?.values?.embeddedJobCpuUsPerMsg).toBeGreaterThan(0);
    if (job?.values?.brokerCpuUsPerMsg === undefined) {
      expect(job?.notes?.join()).toMatch(/^broker CPU: not measured \(.+\)$/);
    } else {
      expect(job.values.brokerCpuUsPerMsg).toBeGreaterThanOrEqual(0);
    }
    expect(job?.msgsPerSecMin).toBeLessThanOrEqual(job?.msgsPerSecMax ?? 0);
    expect(verdicts(job === undefined ? [] : [job]).map((verdict) => verdict.target)).toContain(
      'cpuOverParts <= 1.15',
    );
    expect(discarded?.msgsPerSec).toBeGreaterThan(0);
    expect(
      verdicts(discarded === undefined ? [] : [discarded]).map((verdict) => verdict.target),
    ).toContain('publishingShareOfTime <= 0.1');
    expect(discarded?.values?.publishingShareMin).toBeLessThanOrEqual(
      discarded?.values?.publishingShareMax ?? Number.NaN,
    );
    expect(formatTable([job, discarded].flatMap((result) => result ?? []))).toContain(
      'rabbitmq-results-discarded',
    );
  });
});
