import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { MemberReach } from '../cluster/node-connection.js';
import { firstChunk } from './first-chunk.js';

/**
 * The first offset of the first chunk of `stream` stamped at or after `timestampMs`: the first
 * chunk at RabbitMQ's timestamp offset spec (./first-chunk.ts), which osiris resolves by a
 * scan of the chunks' timestamps in log order (osiris_log:init_offset_reader). A time before
 * the first chunk attaches at it; a time later than every chunk attaches at the stream's end,
 * where nothing arrives until the next write: undefined after `timeoutMs` then (a caller that
 * knows the last chunk's timestamp asks only when a chunk qualifies).
 */
export async function firstOffsetAt(
  params: ClientParams,
  stream: string,
  timestampMs: number,
  timeoutMs: number,
  member: MemberReach = {},
): Promise<bigint | undefined> {
  const chunk = await firstChunk(
    params,
    // The client writes no value for a timestamp of 0; before every chunk, 1 reads the same.
    { stream, from: { timestamp: Math.max(Math.trunc(timestampMs), 1) }, ...member },
    timeoutMs,
  );
  return chunk?.firstOffset;
}
