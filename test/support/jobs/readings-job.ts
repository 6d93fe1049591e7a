// The partitioned job of the RabbitMQ failover test and of its child instances: three readings
// per step, summed, one loop per partition of a super stream, named JOB (its consumer group on
// every partition, when read single-active, and the base of its producer names).
import {
  aggregate,
  jsonMessage,
  type Partition,
  type PartitionedRunner,
  type Runner,
  type PartitionedSource,
  type Source,
  type Target,
} from '../../../src/index.js';

export const JOB = 'failover-job';

export interface Reading {
  readonly sensor: number;
  readonly value: number;
}

export interface ReadingsSum {
  readonly n: number;
  readonly sum: number;
}

/** Message `i` of partition `partition`: the same bytes whichever broker stores them. */
export function reading(partition: number, i: number): Uint8Array {
  return jsonMessage({ sensor: (i + partition) % 7, value: (i * 7919 + partition) % 1000 });
}

/** The job's steps over `source`, before its target. */
function readings(source: Source | PartitionedSource) {
  return aggregate<Reading>(source)
    .count(3)
    .aggregate<ReadingsSum, ReadingsSum>({
      init: () => ({ n: 0, sum: 0 }),
      add: (acc, r) => ({ n: acc.n + 1, sum: acc.sum + r.value * (r.sensor + 1) }),
      result: (acc) => acc,
    });
}

/** The job over a super stream, each partition's results to `target(partition)`. */
export function readingsJob(
  source: PartitionedSource,
  target: (partition: Partition) => Target,
): PartitionedRunner<Reading, ReadingsSum, ReadingsSum> {
  return readings(source).toPartitions(target, { name: JOB, retryDelayMs: 10 });
}

/** One partition's loop of the job, on its own: what `readingsJob` runs for that partition. */
export function readingsPartitionJob(
  source: Source,
  target: Target,
): Runner<Reading, ReadingsSum, ReadingsSum> {
  return readings(source).to(target, { retryDelayMs: 10 });
}
