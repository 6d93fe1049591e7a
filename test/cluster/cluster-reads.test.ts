// Reading on the real 3-node RabbitMQ cluster while a node is unreachable or frozen: a job
// started while the first of its URLs' nodes is down starts through the others, and a job
// whose source replica freezes (SIGSTOP: connections open, nothing answered) reads on from
// another member within the stall bound instead of waiting for the node to come back.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrokerUnavailableError, lastWriteId } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { CHUNK, feeder } from '../support/brokers/cluster-feeder.js';
import { freezeNode } from '../support/brokers/frozen-node.js';
import { keepingLogger, type KeepingLogger } from '../support/doubles/keeping-logger.js';
import {
  clusterUrls,
  startNode,
  stopNode,
  type ClusterNode,
} from '../support/brokers/rabbitmq-cluster.js';
import { readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { readingsPartitionJob } from '../support/jobs/readings-job.js';
import { bound } from '../support/timing.js';
import { expectSameMessages } from '../support/results/same-bytes.js';

/** rabbit.source()'s default stallTimeoutMs, the bound the README gives. */
const STALL_TIMEOUT_MS = 10_000;
/** Twice the bound: a job that waits for the node to come back stays silent all along. */
const FREEZE_MS = 2 * STALL_TIMEOUT_MS;
/** Room for connecting and subscribing elsewhere after the stall, on a busy 2-core machine. */
const RESUBSCRIBE_SLACK_MS = 4_000;

let admins: RabbitMQ[] = [];
const streams: string[] = [];
beforeAll(async () => {
  admins = await Promise.all(clusterUrls().map((url: string) => connect(url)));
});
afterAll(async () => {
  const admin = admins[1];
  for (const stream of streams) await admin?.deleteStream(stream).catch(() => undefined);
  await Promise.all(admins.map((rabbit) => rabbit.close()));
});

function admin(n: ClusterNode): RabbitMQ {
  return admins[n - 1] as RabbitMQ;
}

/** A stream on all three nodes, whose leader is node `leader` (RabbitMQ's client-local rule). */
async function streamLedBy(prefix: string, leader: ClusterNode): Promise<string> {
  const stream = uniqueStream(prefix);
  streams.push(stream);
  await admin(leader).createStream(stream, { initialClusterSize: 3 });
  return stream;
}

/** The nodes `logger`'s source read `stream` on, in order. */
function readsOn(logger: KeepingLogger, stream: string): string[] {
  return logger.lines
    .filter(([, , message]) => message.startsWith(`reading '${stream}' on `))
    .map(([, fields]) => (fields as { node: string }).node);
}

/** Waits until `producer`'s last publishing id on `target` reaches `last`. */
async function caughtUp(rabbit: RabbitMQ, target: string, last: bigint): Promise<void> {
  const watch = rabbit.target(target, { producer: 'job' });
  const giveUp = Date.now() + 60_000;
  while ((await watch.lastPublishingId().catch(() => -1n)) < last && Date.now() < giveUp) {
    await sleep(100);
  }
  await watch.close();
}

describe('reading on a 3-node RabbitMQ cluster with a node out', () => {
  it('should start a job while the first node of its URL list is down, which a single URL cannot', async () => {
    const source = await streamLedBy('reads-source', 2);
    const target = await streamLedBy('reads-target', 3);
    const feed = feeder(admin(2), source);
    while (feed.appended < 10 * CHUNK) await sleep(20);
    const appended = await feed.stop();
    await stopNode(1);
    try {
      const urls = clusterUrls();
      await expect(connect(urls[0] as string)).rejects.toThrow(BrokerUnavailableError);
      const rabbit = await connect(urls);
      try {
        const logger = keepingLogger();
        const jobTarget = rabbit.target(target, { producer: 'job' });
        await readingsPartitionJob(rabbit.source(source, { logger }), jobTarget).run({
          untilCaughtUp: true,
        });
        expect(await jobTarget.lastPublishingId()).toBe(lastWriteId(BigInt(appended - 1)));
        expect(jobTarget.node?.port, 'published on the target leader, node 3').toBe(5563);
        expect(readsOn(logger, source)).not.toContain('127.0.0.1:5561');
      } finally {
        await rabbit.close();
      }
    } finally {
      await startNode(1); // the other tests need the whole cluster
    }
  });

  it(
    "should read on from another member within stallTimeoutMs while the replica it reads from is frozen, and leave the target byte-identical to an uninterrupted run's",
    async () => {
      // The job connects through node 1, a replica of the source: it reads there. The source's
      // and the target's leader is node 2, so the frozen node holds the reader and nothing else
      // the job needs.
      const source = await streamLedBy('reads-source', 2);
      const target = await streamLedBy('reads-target', 2);
      const rabbit = await connect(clusterUrls()[0] as string);
      const feed = feeder(admin(2), source);
      const logger = keepingLogger();
      const jobTarget = rabbit.target(target, { producer: 'job', confirmTimeoutMs: 5_000 });
      const job = readingsPartitionJob(rabbit.source(source, { logger }), jobTarget);
      const publishedAt: number[] = [];
      job.on('published', () => publishedAt.push(Date.now()));
      const stop = new AbortController();
      const running = job.run({ signal: stop.signal });
      let frozenAt = 0;
      let thawedAt = 0;
      try {
        while (publishedAt.length < 20) await sleep(20);
        expect(readsOn(logger, source), 'read on the URL node, a replica').toEqual([
          '127.0.0.1:5561',
        ]);
        const thaw = freezeNode(1);
        frozenAt = Date.now();
        try {
          await sleep(FREEZE_MS);
        } finally {
          thaw();
          thawedAt = Date.now();
        }
      } finally {
        const appended = await feed.stop();
        await caughtUp(rabbit, target, BigInt(appended - 1));
        stop.abort();
        await running;
        await rabbit.close();
      }

      const during = publishedAt.filter((at) => at > frozenAt && at < thawedAt);
      // From the freeze to the thaw, through every result in between (the first ones may come
      // from chunks the job had been delivered before the freeze).
      const moments = [frozenAt, ...during, thawedAt];
      const longestPauseMs = Math.max(...moments.slice(1).map((at, i) => at - (moments[i] ?? at)));
      console.log(
        `frozen for ${thawedAt - frozenAt} ms: ${during.length} results during the freeze, ` +
          `the longest pause ${longestPauseMs} ms; reads on ${readsOn(logger, source).join(', ')}`,
      );
      expect(longestPauseMs, 'the pause the frozen replica caused').toBeLessThanOrEqual(
        STALL_TIMEOUT_MS * 1.1 + RESUBSCRIBE_SLACK_MS,
      );
      expect(during.length, 'results published during the freeze').toBeGreaterThan(10);
      expect(readsOn(logger, source).slice(1)).not.toContain('127.0.0.1:5561');

      // The uninterrupted run: the same job over the same source, to another stream.
      const reference = await streamLedBy('reads-reference', 2);
      const referenceTarget = admin(2).target(reference, { producer: 'job' });
      // untilCaughtUp reads to the end the leader committed, though it may read on node 1, a
      // replica still catching up just after the thaw (test/cluster/cluster-end-offset.test.ts).
      await readingsPartitionJob(admin(2).source(source), referenceTarget).run({
        untilCaughtUp: true,
      });
      await referenceTarget.close();
      const actual = (await readAll(admin(2), target)).map((bytes) => Buffer.from(bytes));
      const expected = (await readAll(admin(2), reference)).map((bytes) => Buffer.from(bytes));
      expect(actual.length).toBeGreaterThan(0);
      expectSameMessages(actual, expected);
    },
    bound(180_000),
  );
});
