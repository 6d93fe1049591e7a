import { describe, expect, it } from 'vitest';
import { jsonMessage, RetentionGapError, type Target } from '../../../src/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import {
  brokerWithCountedReadings,
  countJob,
  reading,
  results,
} from '../../support/jobs/memory-job.js';

/** The target, counting how often the runner asks whether its producer ever published. */
function asking(target: Target): Target & { readonly asked: number } {
  let asked = 0;
  return {
    ...forwarding(target),
    hasPublished: () => {
      asked++;
      return target.hasPublished();
    },
    get asked() {
      return asked;
    },
  };
}

describe('resuming when the last publishing id is 0', () => {
  it('should report the removed offsets when offset 0 was published and retention removed 1..k', async () => {
    const memory = brokerWithCountedReadings(1);
    await countJob(memory).run({ untilCaughtUp: true }); // publishes id 0
    for (let i = 1; i < 6; i++) memory.append('source', [jsonMessage(reading('a', i, i))]);
    memory.truncate('source', 4n); // removes offsets 0..3, of which 1..3 were never processed
    const running = countJob(memory).run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(RetentionGapError);
    await expect(running).rejects.toMatchObject({ offset: 1n, firstAvailable: 4n });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n]); // nothing skipped to 4
  });

  it('should start a new job at the first stored offset when retention removed the head', async () => {
    const memory = brokerWithCountedReadings(6);
    memory.truncate('source', 4n);
    const target = asking(memory.target('target', { producer: 'p' }));
    await countJob(memory, target).run({ untilCaughtUp: true });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([4n, 5n]);
    expect(target.asked).toBe(1); // the producer never published: 'first' was right
  });

  it('should resume at 1 without asking when only offset 0 was removed', async () => {
    const memory = brokerWithCountedReadings(1);
    await countJob(memory).run({ untilCaughtUp: true });
    memory.append('source', [jsonMessage(reading('a', 1, 1))]);
    memory.append('source', [jsonMessage(reading('a', 2, 2))]);
    memory.truncate('source', 1n);
    const target = asking(memory.target('target', { producer: 'p' }));
    await countJob(memory, target).run({ untilCaughtUp: true });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n]);
    expect(target.asked).toBe(0);
  });
});
