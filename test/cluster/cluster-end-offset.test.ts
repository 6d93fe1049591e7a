// untilCaughtUp on the real 3-node cluster: a source reads on a replica, but the end it
// catches up to is the stream's committed end as its leader knows it. A replica that lags
// (just after its node thawed, or under load) must not end the run before messages that were
// confirmed to their producer when the run started.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastWriteId } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { holdMember } from '../support/brokers/held-member.js';
import { clusterUrls } from '../support/brokers/rabbitmq-cluster.js';
import { publishAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { reading, readingsPartitionJob } from '../support/jobs/readings-job.js';
import { bound } from '../support/timing.js';

/** Messages every member holds, then messages only the leader and node 3 hold: 3 per result. */
const BEFORE = 300;
const WHILE_HELD = 300;

let leader: RabbitMQ;
let reader: RabbitMQ;
const streams: string[] = [];
beforeAll(async () => {
  const urls = clusterUrls();
  leader = await connect(urls[1] as string);
  // Node 1's URL: a replica of the streams below, where the source then reads.
  reader = await connect(urls[0] as string);
});
afterAll(async () => {
  for (const stream of streams) await leader.deleteStream(stream).catch(() => undefined);
  await Promise.all([leader.close(), reader.close()]);
});

/** A stream on all three nodes led by node 2 (RabbitMQ's client-local rule). */
async function ledByNode2(prefix: string): Promise<string> {
  const stream = uniqueStream(prefix);
  streams.push(stream);
  await leader.createStream(stream, { initialClusterSize: 3 });
  return stream;
}

function readings(from: number, count: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => reading(0, from + i));
}

describe('untilCaughtUp on a 3-node RabbitMQ cluster whose replica lags', () => {
  it(
    'should read to the end the leader committed, not to the lagging replica it reads on',
    async () => {
      const source = await ledByNode2('end-source');
      const target = await ledByNode2('end-target');
      await publishAll(leader, source, readings(0, BEFORE));
      const release = await holdMember(1, source);
      let released: Promise<void> | undefined;
      const releaseOnce = (): Promise<void> => (released ??= release());
      const jobTarget = leader.target(target, { producer: 'job' });
      try {
        // Confirmed by the leader and node 3, a quorum; node 1 knows nothing of them.
        await publishAll(leader, source, readings(BEFORE, WHILE_HELD));
        const jobSource = reader.source(source);
        expect(await jobSource.endOffset()).toBe(BigInt(BEFORE + WHILE_HELD));

        const job = readingsPartitionJob(jobSource, jobTarget);
        let sourceEnd: bigint | undefined;
        // The end is read before the job starts reading: node 1 may catch up from then on.
        job.on('started', (event) => {
          sourceEnd = event.sourceEnd;
          void releaseOnce();
        });
        await job.run({ untilCaughtUp: true });
        expect(sourceEnd).toBe(BigInt(BEFORE + WHILE_HELD));
        expect(await jobTarget.lastPublishingId()).toBe(
          lastWriteId(BigInt(BEFORE + WHILE_HELD - 1)),
        );
      } finally {
        await releaseOnce();
        await jobTarget.close();
      }
    },
    bound(60_000),
  );
});
