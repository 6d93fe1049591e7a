import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError, lastWriteId, type Target } from '../../../src/index.js';
import {
  appendOrders,
  JOB,
  ordersBroker,
  ordersJob,
  rollupsByProducer,
  whenPublished,
  type Order,
} from '../../support/jobs/partitioned-job.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';

const producers = ['rollup@orders-0', 'rollup@orders-1', 'rollup@orders-2'];

/** What one instance, run to the end of `chunks` chunks per partition without any fault, writes. */
async function uninterrupted(
  partitions: number,
  chunks: number,
): Promise<Map<string, Uint8Array[]>> {
  const broker = ordersBroker(partitions, chunks);
  await ordersJob(broker, { singleActive: false }).run({ untilCaughtUp: true });
  return rollupsByProducer(broker);
}

/** A target whose publishes wait until `open()`; `issued` tells each publish as it is made. */
function held(target: Target, issued: (id: bigint) => void): Target & { open(): void } {
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return {
    ...forwarding(target),
    publish: async (id, messages) => {
      issued(id);
      await gate;
      return target.publish(id, messages);
    },
    open: () => open(),
  };
}

describe('a partitioned job', () => {
  it('runs one loop per partition, each under its own producer name and resuming from its own last publishing id', async () => {
    const broker = ordersBroker(3, 2);
    const first = await ordersJob(broker, { singleActive: false }).run({ untilCaughtUp: true });
    expect(first.partitions.map((p) => p.results)).toEqual([2, 2, 2]);
    // More arrives on two partitions only; a new run resumes each where it stopped.
    appendOrders(broker, 'orders-0', 0, 2, 3);
    appendOrders(broker, 'orders-2', 2, 2, 1);
    const job = ordersJob(broker, { singleActive: false });
    const started: [number, bigint][] = [];
    job.on('started', (event, partition) =>
      started.push([partition.index, event.lastPublishingId]),
    );
    const second = await job.run({ untilCaughtUp: true });
    expect(started).toEqual([
      [0, lastWriteId(5n)],
      [1, lastWriteId(5n)],
      [2, lastWriteId(5n)],
    ]);
    expect(second).toMatchObject({
      results: 4,
      duplicates: 0,
      partitions: [{ results: 3 }, { results: 0 }, { results: 1 }],
    });
    const written = rollupsByProducer(broker);
    expect([...written.keys()].sort()).toEqual(producers);
    expect(written).toEqual(await uninterrupted3(broker));
  });

  it('fails over partition by partition between two instances: the target is byte for byte an uninterrupted run', async () => {
    const broker = ordersBroker(2, 8);
    const a = new AbortController();
    const b = new AbortController();
    const instanceA = ordersJob(broker, { connection: 'A' });
    const instanceB = ordersJob(broker, { connection: 'B' });
    const stepsDown: string[] = [];
    instanceA.on('deactivated', (event) => stepsDown.push(event.stream));
    let bRun: Promise<unknown> | undefined;
    // B joins once A stored two results on partition 1: the rule (1 rem 2) moves that one to B.
    const offA = instanceA.on('published', (_, partition) => {
      if (
        partition.index === 1 &&
        (rollupsByProducer(broker).get('rollup@orders-1')?.length ?? 0) === 2
      ) {
        offA();
        bRun = instanceB.run({ signal: b.signal });
      }
    });
    // A stops once B published on partition 1: B takes partition 0 as well, at once.
    const offB = instanceB.on('published', (_, partition) => {
      if (partition.index === 1) {
        offB();
        a.abort();
      }
    });
    const aRun = instanceA.run({ signal: a.signal });
    await whenPublished([instanceA, instanceB], () => {
      const written = [...rollupsByProducer(broker).values()];
      return written.length === 2 && written.every((results) => results.length === 8);
    });
    b.abort();
    await Promise.all([aRun, bRun]);
    expect(stepsDown).toEqual(['orders-1']);
    expect(rollupsByProducer(broker)).toEqual(await uninterrupted(2, 8));
    expect(broker.consumerGroup('orders-0', JOB).members).toEqual([]);
  });

  it('answers a step-down only after its confirms landed, so the next instance resumes after them', async () => {
    const broker = ordersBroker(2, 4);
    const issued: bigint[] = [];
    let holding: (Target & { open(): void }) | undefined;
    const b = new AbortController();
    const instanceB = ordersJob(broker, { connection: 'B' });
    const bStarted: bigint[] = [];
    instanceB.on('started', (event, partition) => {
      if (partition.index === 1) bStarted.push(event.lastPublishingId);
    });
    let bRun: Promise<unknown> | undefined;
    const a = new AbortController();
    // A's first publish on partition 1 is held; B joins right then and takes partition 1.
    const instanceA = ordersJob(broker, {
      connection: 'A',
      target: (target, partition) =>
        partition.index === 1
          ? (holding = held(target, (id) => {
              issued.push(id);
              bRun ??= instanceB.run({ signal: b.signal });
            }))
          : target,
    });
    const aRun = instanceA.run({ signal: a.signal });
    await whenPublished([instanceA, instanceB], () => bRun !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 20)); // a bound: the step-down may be answered by now
    // Without the drain B would have started by now, from the stale id before A's result.
    expect(bStarted).toEqual([]);
    const group = broker.consumerGroup('orders-1', JOB);
    expect(group.active).toBeUndefined();
    expect(group.deactivating).toBe(group.members[0]); // A, the first to join
    holding?.open();
    await whenPublished([instanceA, instanceB], () => bStarted.length > 0);
    // B resumes after the last result A issued before it stepped down, not before it.
    expect(issued.length).toBeGreaterThan(0);
    expect(bStarted).toEqual([issued.at(-1)]);
    await whenPublished(
      [instanceA, instanceB],
      () => (rollupsByProducer(broker).get('rollup@orders-1')?.length ?? 0) === 4,
    );
    a.abort();
    b.abort();
    await Promise.all([aRun, bRun]);
    expect(rollupsByProducer(broker)).toEqual(await uninterrupted(2, 4));
  });
});

describe('the producer names of a partitioned job', () => {
  it('refuses two partitions publishing under one name on one target stream, naming the rule and the name', async () => {
    const broker = ordersBroker(2, 1);
    const job = aggregate<Order>(broker.superStreamSource('orders'))
      .count(3)
      .reduce((sum, o) => sum + o.amount, 0)
      .toPartitions(() => broker.target('rollups', { producer: 'same' }), { name: JOB });
    await expect(job.run({ untilCaughtUp: true })).rejects.toThrow(
      new ConfigError(
        'producer',
        "must be unique across the partitions of job 'rollup' on target stream 'rollups'",
        'same',
      ),
    );
    expect(broker.messages('rollups')).toEqual([]);
  });

  it('refuses more than 255 producer names on one target stream', async () => {
    const broker = ordersBroker(256, 1);
    const job = ordersJob(broker, { singleActive: false });
    await expect(job.run({ untilCaughtUp: true })).rejects.toThrow(
      "producers must be at most 255 per target stream (RabbitMQ tracks that many), on 'rollups', given: 256",
    );
  });

  it('derives each name from the job name and the partition stream, and needs a job name without a consumer group', () => {
    const broker = ordersBroker(2, 1);
    const names: string[] = [];
    const builder = aggregate<Order>(broker.superStreamSource('orders'))
      .count(3)
      .reduce((s, o) => s + o.amount, 0);
    expect(() =>
      builder.toPartitions((p) => (names.push(p.producer), broker.target('rollups', p))),
    ).toThrow('name must be a non-empty string');
    expect(() => builder.to(broker.target('rollups', { producer: 'p' }))).toThrow(
      "to does not apply to super stream 'orders'",
    );
  });
});

/** The uninterrupted run of the broker's own 'orders' (whatever it holds now), on a copy. */
async function uninterrupted3(
  broker: ReturnType<typeof ordersBroker>,
): Promise<Map<string, Uint8Array[]>> {
  const copy = ordersBroker(3, 0);
  for (const stream of broker.partitions('orders')) {
    for (const chunk of broker.chunks(stream))
      copy.append(
        stream,
        chunk.messages.map((m) => m.bytes),
        { timestamp: 0 },
      );
  }
  await ordersJob(copy, { singleActive: false }).run({ untilCaughtUp: true });
  return rollupsByProducer(copy);
}
