import { describe, expect, it } from 'vitest';
import { jsonMessage, PublishError, type Target } from '../../../src/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import {
  brokerWithCountedReadings,
  countJob,
  reading,
  results,
} from '../../support/jobs/memory-job.js';

/** The target, whose `failing`-th publish is lost with its connection: not stored, retriable. */
function losing(target: Target, failing: number): Target {
  let publishes = 0;
  return {
    ...forwarding(target),
    publish: async (id, messages) => {
      if (++publishes === failing)
        throw new PublishError(target.stream, id, true, 'connection lost');
      await target.publish(id, messages);
    },
  };
}

describe('the summary of a run', () => {
  it('should count a result for offset 0 published again after a restart as a duplicate', async () => {
    const memory = brokerWithCountedReadings(1);
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 1,
      duplicates: 0,
      restarts: 0,
    });
    memory.append('source', [jsonMessage(reading('a', 1, 1))]);
    memory.append('source', [jsonMessage(reading('a', 2, 2))]);
    // The last publishing id is 0, so the job reads from the first offset again.
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 2,
      duplicates: 1,
      restarts: 0,
    });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n]);
  });

  it('should count the first result of a new job for offset 0 as new', async () => {
    const memory = brokerWithCountedReadings(3);
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 3,
      duplicates: 0,
      restarts: 0,
    });
  });

  it('should count a result whose publish was lost once, when the broker confirms it', async () => {
    const memory = brokerWithCountedReadings(3);
    const target = losing(memory.target('target', { producer: 'p' }), 3);
    await expect(countJob(memory, target).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 3,
      duplicates: 0,
      restarts: 1,
    });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n]);
  });
});
