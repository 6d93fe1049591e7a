/**
 * The job module of the bench's `PartitionWorkers` task (bench/partitions.ts): every worker
 * thread connects and builds the partitioned bench job; the worker runs its partitions.
 */
import type { PartitionWorker, PartitionWorkerJob } from '../src/partitioning/partition-workers.js';
import { connect } from '../src/rabbitmq/index.js';
import { partitionsJob } from './partitions-job.js';

export interface PartitionsWorkerConfig {
  readonly url: string;
  readonly superStream: string;
  readonly target: string;
}

export default async function build({ config }: PartitionWorker): Promise<PartitionWorkerJob> {
  const { url, superStream, target } = config as PartitionsWorkerConfig;
  const rabbit = await connect(url);
  const job = partitionsJob(rabbit.superStreamSource(superStream), (partition) =>
    rabbit.target(target, { producer: partition.producer }),
  );
  return { job, close: () => rabbit.close() };
}
