// A super-stream target's readResult: the result is on the partition it was routed to.
import { describe, expect, it } from 'vitest';
import { superStreamTarget, type Target } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { publishResults, resultMessages } from '../../support/results/stored-results.js';

/** A 3-partition super stream whose partitions hold `producer`'s results: ids 1, 4 / 2, 5 / 3. */
async function partitionsWithResults(producer: string) {
  const broker = new MemoryBroker({ now: () => 0 });
  const streams = broker.createSuperStream('totals', { partitions: 3 });
  const ids = [[1n, 4n], [2n, 5n], [3n]];
  for (const [index, stream] of streams.entries()) {
    await publishResults(
      (ids[index] ?? []).map((id) => ({ producer, id })),
      () => broker.target(stream, { producer }),
    );
  }
  const asked: string[] = [];
  const partitions: Target[] = streams.map((stream) => {
    const inner = broker.target(stream, { producer });
    return {
      ...forwarding(inner),
      readResult: (id) => {
        asked.push(stream);
        return inner.readResult(id);
      },
    };
  });
  return { streams, asked, target: superStreamTarget(partitions, { superStream: 'totals' }) };
}

describe("a super-stream target's readResult", () => {
  it('searches only the partition whose last publishing id it is, for the resume point', async () => {
    const { streams, asked, target } = await partitionsWithResults('job');
    expect(await target.lastPublishingId()).toBe(5n);
    expect(await target.readResult(5n)).toEqual(resultMessages('job', 5n)[0]);
    expect(asked).toEqual([streams[1]]);
  });

  it('asks the partitions in turn for a lower id, the first that holds it answering', async () => {
    const { streams, asked, target } = await partitionsWithResults('job');
    await target.lastPublishingId();
    expect(await target.readResult(2n)).toEqual(resultMessages('job', 2n)[0]);
    expect(asked).toEqual([streams[0], streams[1]]);
  });

  it('answers undefined when no partition holds the id', async () => {
    const { streams, asked, target } = await partitionsWithResults('job');
    expect(await target.readResult(6n)).toBeUndefined();
    expect(asked).toEqual(streams);
  });
});
