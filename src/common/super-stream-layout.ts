import { ConfigError } from './errors.js';
import { checkStreamName } from './stream-protocol.js';

/**
 * How a super stream's partitions are laid out, as `rabbitmq-streams add_super_stream` takes
 * it: `{ partitions: n }` creates `<name>-0` … `<name>-(n-1)` bound with the keys '0' … 'n-1';
 * `{ bindingKeys }` creates `<name>-<key>` per key. The JS client's `createSuperStream` names
 * them the same way. Default: `{ partitions: 3 }`, the CLI's and the JS client's default.
 */
export type SuperStreamLayout =
  { readonly partitions: number } | { readonly bindingKeys: readonly string[] };

/**
 * The partition stream names of super stream `name`, in partition order: the order of the
 * binding keys, which RabbitMQ stores as each binding's `x-stream-partition-order` and both
 * the Partitions query and a consumer's partition index follow. Each must be a stream name
 * RabbitMQ serves on `vhost` (see `checkStreamName`), so a long super stream name can leave
 * no room for `-<key>`.
 */
export function partitionNames(name: string, layout: SuperStreamLayout, vhost = '/'): string[] {
  checkStreamName('superStream', name, vhost);
  const partitions = layoutPartitions(name, layout);
  // Each holds its binding key: checking them checks the keys too.
  for (const partition of partitions) checkStreamName('partition', partition, vhost);
  return partitions;
}

function layoutPartitions(name: string, layout: SuperStreamLayout): string[] {
  if ('partitions' in layout) {
    const { partitions } = layout;
    if (!Number.isSafeInteger(partitions) || partitions < 1) {
      throw new ConfigError('partitions', 'must be an integer >= 1', partitions);
    }
    return Array.from({ length: partitions }, (_, index) => `${name}-${index}`);
  }
  const { bindingKeys } = layout;
  if (!Array.isArray(bindingKeys) || bindingKeys.length === 0) {
    throw new ConfigError('bindingKeys', 'must be a non-empty array', bindingKeys);
  }
  // Array.isArray left the keys untyped (a JavaScript caller's may be anything).
  const invalid: unknown = bindingKeys.find((key) => typeof key !== 'string' || key === '');
  if (invalid !== undefined) {
    throw new ConfigError('bindingKeys', 'must hold non-empty strings', invalid);
  }
  // RabbitMQ refuses duplicate partition names (validate_super_stream_partitions).
  if (new Set(bindingKeys).size !== bindingKeys.length) {
    throw new ConfigError('bindingKeys', 'must be unique', bindingKeys);
  }
  return bindingKeys.map((key) => `${name}-${key}`);
}

/** The binding key of each partition, in partition order (what RabbitMQ's Route query matches). */
export function bindingKeysOf(layout: SuperStreamLayout): string[] {
  return 'partitions' in layout
    ? Array.from({ length: layout.partitions }, (_, index) => String(index))
    : [...layout.bindingKeys];
}
