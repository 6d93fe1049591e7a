// A job on the embedded broker beside other work in the same process (an HTTP server, a
// metrics scrape): the broker delivers and confirms on microtasks, so without a turn of the
// event loop now and then a catching-up job would hold every timer and socket until it caught
// up.
import { describe, expect, it } from 'vitest';
import { brokerWithCountedReadings, countJob } from '../../support/jobs/memory-job.js';

describe('a job catching up on the embedded broker', () => {
  it('lets the event loop turn while it reads, and writes what it wrote before', async () => {
    const readings = 2_000;
    const broker = brokerWithCountedReadings(readings);
    let turns = 0;
    const tick = (): void => {
      turns++;
      immediate = setImmediate(tick);
    };
    let immediate = setImmediate(tick);
    try {
      expect(await countJob(broker).run({ untilCaughtUp: true })).toMatchObject({
        results: readings,
      });
    } finally {
      clearImmediate(immediate);
    }
    // One turn per 16 chunks read (one chunk per reading here); none before the change.
    expect(turns).toBeGreaterThanOrEqual(readings / 16 - 1);
  });
});
