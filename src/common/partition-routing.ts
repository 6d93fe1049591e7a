import { ConfigError } from './errors.js';

/**
 * Super-stream routing as the RabbitMQ stream clients do it, so that a key lands on the same
 * partition whichever client (or this library, on either broker) publishes it.
 *
 * The rule, as both clients implement it (rabbitmq-stream-java-client HashRoutingStrategy and
 * HashUtils.Murmur3; rabbitmq-stream-js-client SuperStreamPublisher.routeMessage and
 * hash/murmur32): MurmurHash3 x86 32-bit, seed 104729, over the UTF-8 bytes of the routing
 * key, read as an UNSIGNED 32-bit integer, modulo the partition count, indexing the partition
 * list in the order the broker's Partitions query returns it. (The Java client used a signed
 * `(hash & 0x7FFFFFFF) % n` before 2022 and moved to `Integer.remainderUnsigned`.)
 */

/** The seed every RabbitMQ stream client hashes routing keys with. */
export const ROUTING_SEED = 104729;

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

/** MurmurHash3 x86_32 of `data`, as an unsigned 32-bit integer. */
export function murmur3x86(data: Uint8Array, seed: number): number {
  let hash = seed | 0;
  const body = data.length & ~3;
  for (let i = 0; i < body; i += 4) {
    const block =
      (data[i] ?? 0) |
      ((data[i + 1] ?? 0) << 8) |
      ((data[i + 2] ?? 0) << 16) |
      ((data[i + 3] ?? 0) << 24);
    hash ^= scramble(block);
    hash = (hash << 13) | (hash >>> 19);
    hash = (Math.imul(hash, 5) + 0xe6546b64) | 0;
  }
  const tail = data.length & 3;
  if (tail > 0) {
    let block = 0;
    for (let i = tail - 1; i >= 0; i--) block = (block << 8) | (data[body + i] ?? 0);
    hash ^= scramble(block);
  }
  hash ^= data.length;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

function scramble(block: number): number {
  const k = Math.imul(block, C1);
  return Math.imul((k << 15) | (k >>> 17), C2);
}

const utf8 = new TextEncoder();

/**
 * The partition a routing key goes to, among `partitions` in the broker's order. The key is
 * encoded as `TextEncoder` (and Node's `Buffer.from`, which the JS client uses) encode it: a
 * lone surrogate becomes U+FFFD, where Java's `getBytes(UTF_8)` writes '?', so only keys that
 * are well-formed UTF-16 route identically from Java. The empty key routes like any other
 * (the Java client hashes it; the JS client refuses it before routing).
 */
export function partitionFor(routingKey: string, partitions: readonly string[]): string {
  const partition = partitions[partitionIndexFor(routingKey, partitions.length)];
  if (partition === undefined) {
    throw new ConfigError('partitions', 'must not be empty', partitions);
  }
  return partition;
}

/** The index `partitionFor` picks among `count` partitions (NaN when there are none). */
export function partitionIndexFor(routingKey: string, count: number): number {
  return murmur3x86(utf8.encode(routingKey), ROUTING_SEED) % count;
}
