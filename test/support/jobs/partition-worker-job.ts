// The job module the PartitionWorkers tests run in worker threads (and once in the main
// thread, as the single-process reference): super stream `superStream` of orders, summed
// every three per partition, each partition's results on its own stream `<target>-<index>`.
import { aggregate, type PartitionWorker, type PartitionWorkerJob } from '../../../src/index.js';
import { connect } from '../../../src/rabbitmq/index.js';

export interface OrdersJobConfig {
  readonly url: string;
  readonly superStream: string;
  readonly target: string;
  /** A partition stream whose target refuses to give its resume point: its loop fails. */
  readonly failing?: string;
}

export const JOB = 'rollup';

export default async function ordersJob({ config }: PartitionWorker): Promise<PartitionWorkerJob> {
  const { url, superStream, target, failing } = config as OrdersJobConfig;
  const rabbit = await connect(url);
  const job = aggregate<{ amount: number }>(
    rabbit.superStreamSource(superStream, { singleActive: { name: JOB } }),
  )
    .count(3)
    .reduce((sum, order) => sum + order.amount, 0)
    .toPartitions(
      (partition) => {
        const partitionTarget = rabbit.target(`${target}-${partition.index}`, {
          producer: partition.producer,
        });
        if (partition.stream !== failing) return partitionTarget;
        return {
          stream: partitionTarget.stream,
          producer: partitionTarget.producer,
          maxWriteBytes: partitionTarget.maxWriteBytes,
          lastPublishingId: () => Promise.reject(new Error('this target is broken on purpose')),
          hasPublished: () => partitionTarget.hasPublished(),
          readResult: (id, where) => partitionTarget.readResult(id, where),
          publish: (id, messages) => partitionTarget.publish(id, messages),
        };
      },
      { name: JOB, retryDelayMs: 0 },
    );
  return { job, close: () => rabbit.close() };
}
