import { aggregate } from '../src/dsl/pipeline.js';
import type { Partition, PartitionedRunner } from '../src/partitioning/partitioned-runner.js';
import type { PartitionedSource, Target } from '../src/ports/ports.js';
import type { Reading } from './corpus.js';

/** The e2e case's job (1-second windows, a sum per sensor), one loop per partition. */
export function partitionsJob(
  source: PartitionedSource,
  target: (partition: Partition) => Target,
): PartitionedRunner<Reading, number, number> {
  return aggregate<Reading>(source)
    .tumbling('1s')
    .key((reading) => reading.sensor)
    .reduce((total, reading) => total + reading.value, 0)
    .toPartitions(target, { name: 'bench-partitions', retryDelayMs: 10 });
}
