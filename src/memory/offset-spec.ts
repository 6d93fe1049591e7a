import { ConfigError } from '../common/errors.js';
import type { StreamLog } from './stream-log.js';

/**
 * Where a consumer starts, as in RabbitMQ's subscribe command:
 * - `'first'`: the first message still stored (retention may have removed earlier ones);
 * - `'last'`: the first message of the last chunk (so possibly several already stored);
 * - `'next'`: the first message written after subscribing;
 * - `{ offset }`: that offset (clients drop the earlier messages of its chunk), or the first
 *   stored one if retention removed it;
 * - `{ timestamp }`: the first chunk whose timestamp (epoch ms) is at or after it.
 */
export type OffsetSpec =
  'first' | 'last' | 'next' | { readonly offset: bigint } | { readonly timestamp: number };

/**
 * The first offset a subscription with `spec` delivers, resolved once at subscribe time as
 * osiris does (osiris_log:init_offset_reader): `last` on an empty stream and a timestamp
 * later than every chunk both fall back to `next`. An offset beyond the end is kept as is:
 * the server attaches at `next` and the client filters out offsets below the requested one,
 * so the first delivered message is the requested one once it exists.
 */
export function resolveOffsetSpec(log: StreamLog, spec: OffsetSpec): bigint {
  if (spec === 'first') return log.firstOffset;
  if (spec === 'next') return log.nextOffset;
  if (spec === 'last') return log.chunks.at(-1)?.firstOffset ?? log.nextOffset;
  if ('offset' in spec) {
    if (typeof spec.offset !== 'bigint' || spec.offset < 0n) {
      throw new ConfigError('offset', 'must be a bigint >= 0', spec.offset);
    }
    // Below the first stored offset (removed by retention), osiris attaches at the first chunk.
    return spec.offset < log.firstOffset ? log.firstOffset : spec.offset;
  }
  if (!Number.isFinite(spec.timestamp)) {
    throw new ConfigError(
      'timestamp',
      'must be a finite number of epoch milliseconds',
      spec.timestamp,
    );
  }
  return log.chunks[firstChunkAtTime(log, spec.timestamp)]?.firstOffset ?? log.nextOffset;
}

/**
 * The index of the first chunk stamped at or after `timestamp` (`chunks.length` if none): a
 * scan in log order, like osiris, since chunk timestamps come from a clock and need not be sorted.
 */
export function firstChunkAtTime(log: StreamLog, timestamp: number): number {
  const index = log.chunks.findIndex((candidate) => candidate.timestamp >= timestamp);
  return index === -1 ? log.chunks.length : index;
}
