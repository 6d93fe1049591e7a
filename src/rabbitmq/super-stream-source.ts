import type { Source } from '../core/ports.js';
import { ConfigError } from '../common/errors.js';
import { rabbitSource, type RabbitSourceOptions } from './source.js';

/**
 * A super stream to read partition by partition: one `Source` per partition stream, in
 * partition order, each read by its own loop. The shape the partitioned runner takes.
 */
export interface PartitionedSource {
  readonly superStream: string;
  /** The partitions' sources, in the order of the broker's Partitions query. */
  partitions(): Promise<readonly Source[]>;
}

/**
 * The partitions of `superStream`, as `listPartitions` names them, each a `rabbitSource`.
 * With `options.singleActive`, every partition subscription names the super stream, so that
 * RabbitMQ applies its partition rule to each partition's group.
 */
export function superStreamSource(
  superStream: string,
  listPartitions: () => Promise<readonly string[]>,
  options: RabbitSourceOptions,
): PartitionedSource {
  if (typeof superStream !== 'string' || superStream === '') {
    throw new ConfigError('superStream', 'must be a non-empty string', superStream);
  }
  const partitionOptions: RabbitSourceOptions =
    options.singleActive === undefined
      ? options
      : { ...options, singleActive: { ...options.singleActive, superStream } };
  // Checks the options once, where they are given, not when the partitions are listed.
  rabbitSource(superStream, partitionOptions);
  return {
    superStream,
    partitions: async () =>
      (await listPartitions()).map((partition) => rabbitSource(partition, partitionOptions)),
  };
}
