// A job on the real 3-node RabbitMQ cluster while nodes go away: the target stream's leader
// node, the source stream's leader node, and every node in turn (a rolling restart). A feeder
// keeps appending to the source meanwhile, itself through a target whose leader may move.
// The job's target must then hold, byte for byte, what one uninterrupted run writes.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeResult, isRetriable, lastWriteId } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import type { RabbitTarget } from '../../src/rabbitmq/write/target.js';
import {
  clusterUrls,
  nodeOfPort,
  startNode,
  stopNode,
  type ClusterNode,
} from '../support/brokers/rabbitmq-cluster.js';
import { runRecorded } from '../support/clients/cli-run.js';
import { keepingLogger } from '../support/doubles/keeping-logger.js';
import { readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { startBalancer } from '../support/brokers/tcp-balancer.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { readingsPartitionJob } from '../support/jobs/readings-job.js';
import { CHUNK, feeder } from '../support/brokers/cluster-feeder.js';
import { bound } from '../support/timing.js';
import { expectSameMessages } from '../support/results/same-bytes.js';

let admins: RabbitMQ[] = [];
const streams: string[] = [];
beforeAll(async () => {
  admins = await Promise.all(clusterUrls().map((url: string) => connect(url)));
});
afterAll(async () => {
  const admin = admins[0];
  for (const stream of streams) await admin?.deleteStream(stream).catch(() => undefined);
  await Promise.all(admins.map((rabbit) => rabbit.close()));
});

/**
 * A stream on all three nodes, whose leader is node `leader` (RabbitMQ's client-local rule).
 * The admin connection to a node a previous test stopped may learn of its loss only when
 * asked (on a busy machine, after the node is back): that loss is retriable, so it asks again.
 */
async function streamLedBy(prefix: string, leader: number): Promise<string> {
  const stream = uniqueStream(prefix);
  streams.push(stream);
  const admin = admins[leader - 1] as RabbitMQ;
  const options = { initialClusterSize: 3 };
  await admin.createStream(stream, options).catch(async (error: unknown) => {
    if (!isRetriable(error)) throw error;
    await admin.createStream(stream, options);
  });
  return stream;
}

/** The node (1 to 3) leading `stream` now, once it has a leader. */
async function leaderOf(stream: string): Promise<ClusterNode> {
  const giveUp = Date.now() + bound(30_000);
  for (;;) {
    for (const admin of admins) {
      const members = await admin.members(stream).catch(() => undefined);
      if (members !== undefined) return nodeOfPort(members.leader.port);
    }
    if (Date.now() > giveUp) throw new Error(`no leader for ${stream} within ${bound(30_000)} ms`);
    await sleep(200);
  }
}

interface Outage {
  /** Which node to stop, asked when it is its turn. */
  readonly node: () => Promise<ClusterNode>;
}

/**
 * Runs the job (connected through node 1) from `source` to `target` while each outage in turn
 * stops its node, waits for the job to publish on without it, and starts it again; then checks
 * the target against an uninterrupted run.
 */
async function runThrough(outages: readonly Outage[], source: string, target: string) {
  const rabbit = await connect(clusterUrls()[0] as string);
  const feed = feeder(rabbit, source);
  const jobTarget = rabbit.target(target, { producer: 'job', confirmTimeoutMs: 5_000 });
  const logger = keepingLogger();
  const job = readingsPartitionJob(rabbit.source(source, { logger }), jobTarget);
  let published = 0;
  const restarts: string[] = [];
  job.on('published', () => published++);
  job.on('restart', ({ error }) => restarts.push(String(error)));
  const stop = new AbortController();
  const running = job.run({ signal: stop.signal });
  const stopped: ClusterNode[] = [];
  /** Waits for 20 more results; fails naming `when`, the feeder's and the job's last words. */
  const twentyMore = async (when: string): Promise<void> => {
    const before = published;
    const giveUp = Date.now() + bound(60_000);
    while (published < before + 20 && Date.now() < giveUp) await sleep(20);
    const recent = logger.lines.slice(-6).map(([level, fields, message]) => {
      const { cause } = fields as { cause?: string };
      return `${level} ${message}${cause === undefined ? '' : ` (${cause})`}`;
    });
    expect(
      published,
      `the job published ${published - before} of 20 results ${when} within ` +
        `${bound(60_000)} ms (nodes stopped so far: ${stopped.join(', ')}; feeder at ` +
        `${feed.appended}, ${feed.failures} retries; job restarts: ` +
        `${restarts.slice(-3).join(', ')}; source: ${recent.join(' | ')})`,
    ).toBeGreaterThanOrEqual(before + 20);
  };
  try {
    for (const outage of outages) {
      // The job publishes when its node is stopped: it has results under way.
      await twentyMore('before the next node was stopped');
      const node = await outage.node();
      stopped.push(node);
      await stopNode(node);
      try {
        // It goes on without the node: new results confirmed by the other two.
        await twentyMore(`while node ${node} was down`);
      } finally {
        await startNode(node); // whatever happened: the next test needs the whole cluster
      }
    }
  } finally {
    const appended = await feed.stop();
    // Caught up: the job's last result covers the feeder's last message.
    const giveUp = Date.now() + bound(60_000);
    const watch = rabbit.target(target, { producer: 'job' });
    while (
      (await watch.lastPublishingId().catch(() => -1n)) < BigInt(appended - 1) &&
      Date.now() < giveUp
    ) {
      await sleep(100);
    }
    await watch.close();
    stop.abort();
    await running;
    await rabbit.close();
  }

  // The uninterrupted run: the same job over the same source, to another stream.
  const admin = admins[0] as RabbitMQ;
  const reference = await streamLedBy('cluster-reference', 1);
  const referenceTarget = admin.target(reference, { producer: 'job' });
  await readingsPartitionJob(admin.source(source), referenceTarget).run({ untilCaughtUp: true });
  await referenceTarget.close();
  const expected = (await readAll(admin, reference)).map((bytes) => Buffer.from(bytes));
  const actual = (await readAll(admin, target)).map((bytes) => Buffer.from(bytes));
  const reads = logger.lines.filter(([, , message]) =>
    message.startsWith(`reading '${source}' on `),
  );
  return {
    expected,
    actual,
    stopped,
    restarts,
    feederFailures: feed.failures,
    reads: reads.length,
  };
}

/** What the job's node-losing run reports, for the test's console line. */
function summary(what: string, run: Awaited<ReturnType<typeof runThrough>>): string {
  const last = run.actual.at(-1);
  const lastOffset = last === undefined ? 'none' : String(decodeResult(last).lastOffset);
  return (
    `${what}: nodes stopped ${run.stopped.join(', ')}; ${run.actual.length} results up to ` +
    `offset ${lastOffset}; job restarts ${run.restarts.length}; ` +
    `feeder retries ${run.feederFailures}; the source subscribed ${run.reads} times`
  );
}

describe('a job on a 3-node RabbitMQ cluster', () => {
  it('should publish on the leader when connected to another node, and read from a replica', async () => {
    const source = await streamLedBy('cluster-source', 2);
    const target = await streamLedBy('cluster-target', 3);
    // Through node 2, the source's leader: reads must go elsewhere, writes to node 3.
    const rabbit = await connect(clusterUrls()[1] as string);
    const feed = feeder(rabbit, source);
    while (feed.appended < 20 * CHUNK) await sleep(20);
    const appended = await feed.stop();
    const jobTarget: RabbitTarget = rabbit.target(target, { producer: 'job' });
    const logger = keepingLogger();
    await readingsPartitionJob(rabbit.source(source, { logger }), jobTarget).run({
      untilCaughtUp: true,
    });
    expect(jobTarget.node?.port, 'the node the job published on').toBe(5563);
    expect(await jobTarget.lastPublishingId()).toBe(lastWriteId(BigInt(appended - 1)));
    await rabbit.close();
    // Its reads (the job's, and the end-offset question's) went to replicas of the source.
    const readOn = logger.lines
      .filter(([, , message]) => message.startsWith(`reading '${source}' on `))
      .map(([, fields]) => (fields as { node: string }).node);
    expect(readOn.length).toBeGreaterThan(0);
    for (const node of readOn) expect(['127.0.0.1:5561', '127.0.0.1:5563']).toContain(node);
  });

  it('should land on the leader through a load balancer with the address resolver, trying again where it lands elsewhere', async () => {
    const source = await streamLedBy('cluster-source', 2);
    const target = await streamLedBy('cluster-target', 3);
    const balancer = await startBalancer(clusterUrls().map((url) => parseStreamUrl(url)));
    try {
      const viaBalancer = { host: balancer.host, port: balancer.port };
      const rabbit = await connect(
        {
          ...parseStreamUrl(clusterUrls()[0] as string),
          hostname: balancer.host,
          port: balancer.port,
        },
        { addressResolver: () => viaBalancer },
      );
      const feed = feeder(rabbit, source);
      while (feed.appended < 10 * CHUNK) await sleep(20);
      const appended = await feed.stop();
      const jobTarget = rabbit.target(target, { producer: 'job' });
      await readingsPartitionJob(rabbit.source(source), jobTarget).run({ untilCaughtUp: true });
      expect(jobTarget.node?.port).toBe(5563);
      expect(await jobTarget.lastPublishingId()).toBe(lastWriteId(BigInt(appended - 1)));
      await rabbit.close();
      // Round robin over three nodes: landing on a given one took more than one connection.
      expect(balancer.connections).toBeGreaterThan(3);
    } finally {
      await balancer.close();
    }
  });

  it("should publish on another node's leader after connect()'s signal has aborted (it bounds the first connection only)", async () => {
    const target = await streamLedBy('cluster-target', 2);
    const startup = new AbortController();
    const rabbit = await connect(clusterUrls()[0] as string, { signal: startup.signal });
    startup.abort();
    const jobTarget = rabbit.target(target, { producer: 'job', confirmTimeoutMs: 5_000 });
    await jobTarget.publish(7n, [new Uint8Array([1])]);
    expect(jobTarget.node?.port).toBe(5562);
    await rabbit.close();
  });

  it("should answer a source's end offset while the URL's node is down, asking a member it read from", async () => {
    const stream = await streamLedBy('cluster-source', 2);
    const rabbit = await connect(clusterUrls()[0] as string);
    const feed = feeder(rabbit, stream);
    while (feed.appended < 3 * CHUNK) await sleep(20);
    const appended = await feed.stop();
    const source = rabbit.source(stream, { timeoutMs: 3_000 });
    const reading = new AbortController();
    for await (const _ of source.read(0n, reading.signal)) break; // it has met the members
    await stopNode(1);
    try {
      expect(await source.endOffset()).toBe(BigInt(appended));
    } finally {
      await startNode(1);
      await rabbit.close();
    }
  });

  it("should report each stream's leader and replicas in status", async () => {
    const source = await streamLedBy('cluster-source', 2);
    const target = await streamLedBy('cluster-target', 3);
    const args = ['status', '--source', source, '--target', target, '--producer', 'job', '--json'];
    const out = await runRecorded([...args, '--url', clusterUrls()[0] as string]);
    expect(out.code, out.stderr).toBe(0);
    const status = JSON.parse(out.stdout) as Record<string, unknown>;
    const others = (leader: string) =>
      ['127.0.0.1:5561', '127.0.0.1:5562', '127.0.0.1:5563'].filter((node) => node !== leader);
    expect(status['sourceMembers']).toEqual({
      leader: '127.0.0.1:5562',
      replicas: others('127.0.0.1:5562'),
    });
    expect(status['targetMembers']).toEqual({
      leader: '127.0.0.1:5563',
      replicas: others('127.0.0.1:5563'),
    });
  });

  it(
    "should leave the target byte-identical to an uninterrupted run's after its leader's node is stopped three times",
    async () => {
      // Led first by node 1, which the job is connected through: that node goes first.
      const source = await streamLedBy('cluster-source', 2);
      const target = await streamLedBy('cluster-target', 1);
      const leader = { node: () => leaderOf(target) };
      const run = await runThrough([leader, leader, leader], source, target);
      console.log(summary('target leader stopped', run));
      expect(run.actual.length).toBeGreaterThan(0);
      expectSameMessages(run.actual, run.expected);
    },
    // Above the sum of the waits' own bounds, so that one of them names what was late.
    bound(480_000),
  );

  it(
    "should leave the target byte-identical to an uninterrupted run's after its source's leader's node is stopped three times",
    async () => {
      // Led first by node 1, which the job is connected through: that node goes first.
      const source = await streamLedBy('cluster-source', 1);
      const target = await streamLedBy('cluster-target', 3);
      const leader = { node: () => leaderOf(source) };
      const run = await runThrough([leader, leader, leader], source, target);
      console.log(summary('source leader stopped', run));
      // The broker ends a replica's subscriptions when the leader goes: the source read again.
      expect(run.reads).toBeGreaterThan(1);
      expect(run.actual.length).toBeGreaterThan(0);
      expectSameMessages(run.actual, run.expected);
    },
    // Above the sum of the waits' own bounds, so that one of them names what was late.
    bound(480_000),
  );

  it(
    "should leave the target byte-identical to an uninterrupted run's through a rolling restart of all three nodes",
    async () => {
      const source = await streamLedBy('cluster-source', 2);
      const target = await streamLedBy('cluster-target', 3);
      const each = ([1, 2, 3] as const).map((node) => ({ node: () => Promise.resolve(node) }));
      const run = await runThrough(each, source, target);
      console.log(summary('rolling restart', run));
      expect(run.actual.length).toBeGreaterThan(0);
      expectSameMessages(run.actual, run.expected);
    },
    // Three node restarts: 285 s at a load average of 30 on two cores.
    bound(480_000),
  );
});
