// A job module for PartitionWorkers on the embedded broker: every thread builds its own broker
// holding super stream 'orders' of `partitions` partitions (one chunk of three orders each)
// and the partitioned job summing them into one 'rollups' stream, one producer per partition.
// Threads share no broker: what they publish shows in the 'published' events only.
import type { PartitionWorker, PartitionWorkerJob } from '../../../src/index.js';
import { ordersBroker, ordersJob } from './partitioned-job.js';

export interface MemoryOrdersConfig {
  readonly partitions: number;
  /** One producer name for every partition instead of each its own (a job's mistake). */
  readonly producer?: string;
}

export default function memoryOrdersJob({ config }: PartitionWorker): PartitionWorkerJob {
  const { partitions, producer } = config as MemoryOrdersConfig;
  const broker = ordersBroker(partitions, 1);
  const job = ordersJob(broker, {
    singleActive: false,
    ...(producer === undefined ? {} : { target: () => broker.target('rollups', { producer }) }),
  });
  return { job, close: () => undefined };
}
