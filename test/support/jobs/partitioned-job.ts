// A partitioned job on the embedded broker: a super stream 'orders' of readings, one loop per
// partition summing every three messages, its results on one 'rollups' stream under one
// producer name per partition; and the per-producer view of that stream to compare runs by.
import {
  aggregate,
  jsonMessage,
  type Partition,
  type PartitionedRunner,
  type Target,
} from '../../../src/index.js';
import { MemoryBroker, type MemoryPartitionedSource } from '../../../src/memory/index.js';

export const JOB = 'rollup';

export interface Order {
  readonly key: string;
  readonly amount: number;
}

/**
 * A broker with super stream 'orders' of `partitions` partitions, each holding `chunks`
 * chunks of `perChunk` orders (amounts numbered per partition), and an empty 'rollups'.
 */
export function ordersBroker(partitions: number, chunks: number, perChunk = 3): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  const streams = broker.createSuperStream('orders', { partitions });
  broker.createStream('rollups');
  streams.forEach((stream, p) => appendOrders(broker, stream, p, 0, chunks, perChunk));
  return broker;
}

/** Appends `chunks` chunks of `perChunk` orders to `stream`, numbering from chunk `from`. */
export function appendOrders(
  broker: MemoryBroker,
  stream: string,
  partition: number,
  from: number,
  chunks: number,
  perChunk = 3,
): void {
  for (let c = from; c < from + chunks; c++) {
    const orders = Array.from({ length: perChunk }, (_, i) =>
      jsonMessage({ key: `k${partition}`, amount: c * perChunk + i }),
    );
    broker.append(stream, orders, { timestamp: 0 });
  }
}

/**
 * One instance of the job: every partition's source joins group JOB when `singleActive`;
 * `target` may wrap a partition's target (to hold or watch its publishes).
 */
export function ordersJob(
  broker: MemoryBroker,
  options: {
    singleActive?: boolean;
    target?: (target: Target, partition: Partition) => Target;
    /** The simulated connection its targets declare their producers on (one per instance). */
    connection?: string;
  } = {},
): PartitionedRunner<Order, number, number> {
  const source: MemoryPartitionedSource = broker.superStreamSource(
    'orders',
    options.singleActive === false ? {} : { singleActive: { name: JOB } },
  );
  const wrap = options.target ?? ((target: Target) => target);
  return aggregate<Order>(source)
    .count(3)
    .reduce((sum, order) => sum + order.amount, 0)
    .toPartitions(
      (partition) =>
        wrap(
          broker.target('rollups', {
            producer: partition.producer,
            ...(options.connection === undefined ? {} : { connection: options.connection }),
          }),
          partition,
        ),
      { name: JOB, retryDelayMs: 0 },
    );
}

/** The bytes 'rollups' holds, per producer name (each partition's results in offset order). */
export function rollupsByProducer(broker: MemoryBroker): Map<string, Uint8Array[]> {
  const byProducer = new Map<string, Uint8Array[]>();
  for (const chunk of broker.chunks('rollups')) {
    const producer = chunk.writer?.producer ?? '(none)';
    const bytes = byProducer.get(producer) ?? [];
    bytes.push(...chunk.messages.map((message) => message.bytes));
    byProducer.set(producer, bytes);
  }
  return byProducer;
}

/** Resolves once `predicate` holds, checked now and after every confirm of any of `jobs`' loops. */
export function whenPublished(
  jobs: readonly PartitionedRunner<Order, number, number>[],
  predicate: () => boolean,
): Promise<void> {
  return new Promise((resolve) => {
    if (predicate()) {
      resolve();
      return;
    }
    const offs = jobs.map((job) =>
      job.on('published', () => {
        if (!predicate()) return;
        for (const off of offs) off();
        resolve();
      }),
    );
  });
}
