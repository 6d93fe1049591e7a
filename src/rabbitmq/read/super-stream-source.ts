import type { PartitionedSource } from '../../ports/ports.js';
import { checkStreamName } from '../../common/stream-protocol.js';
import { rabbitSource, type RabbitSource, type RabbitSourceOptions } from './source.js';

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
  checkStreamName('superStream', superStream, options.connection.vhost);
  const partitionOptions: RabbitSourceOptions =
    options.singleActive === undefined
      ? options
      : { ...options, singleActive: { ...options.singleActive, superStream } };
  // Checks the options once, where they are given, not when the partitions are listed.
  rabbitSource(superStream, partitionOptions);
  // Kept across runs: a partition's reader that stepped down stands by in its group for the
  // next run's read, instead of joining again at the end of the group.
  const sources = new Map<string, RabbitSource>();
  return {
    superStream,
    group: options.singleActive?.name,
    partitions: async () =>
      (await listPartitions()).map((partition) => {
        let source = sources.get(partition);
        if (source === undefined) {
          source = rabbitSource(partition, partitionOptions);
          sources.set(partition, source);
        }
        return source;
      }),
    close: async () => {
      await Promise.all([...sources.values()].map((source) => source.close()));
    },
  };
}
