import { describe, expect, it } from 'vitest';
import { jsonMessage, lastWriteId, PublishError, type Target } from '../../../src/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import {
  brokerWithCountedReadings,
  countJob,
  publishOffsetZeroAsEarlierVersion,
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
  it('should resume after a result for offset 0 at offset 1, publishing it once', async () => {
    const memory = brokerWithCountedReadings(1);
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 1,
      duplicates: 0,
      restarts: 0,
    });
    memory.append('source', [jsonMessage(reading('a', 1, 1))]);
    memory.append('source', [jsonMessage(reading('a', 2, 2))]);
    // The last publishing id names offset 0's step, stored whole: the job reads from offset 1.
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 2,
      duplicates: 0,
      restarts: 0,
    });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n]);
  });

  it('should count the result for offset 0 an earlier version stored under id 0 as a duplicate, publishing it no more', async () => {
    const memory = brokerWithCountedReadings(3);
    const earlier = await publishOffsetZeroAsEarlierVersion(memory);
    // A last publishing id of 0 is "never published" or an earlier version's offset 0: the
    // job reads from the first offset, and the target's scan finds offset 0 stored.
    await expect(countJob(memory).run({ untilCaughtUp: true })).resolves.toEqual({
      results: 2,
      duplicates: 1,
      restarts: 0,
    });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n]);
    expect(memory.messages('target')[0]?.bytes).toEqual(earlier);
    expect(memory.chunks('target').map((chunk) => chunk.writer?.publishingId)).toEqual([
      0n,
      lastWriteId(1n),
      lastWriteId(2n),
    ]);
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
