import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { SourceChunk } from '../../ports/ports.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { firstChunk } from './first-chunk.js';
import { streamStats } from './stream-stats.js';

/**
 * One past the last offset a reader of `stream` will be delivered (0 when there is none).
 *
 * StreamStats only gives chunk ids: `committed_chunk_id` is the FIRST offset of the last
 * committed chunk (measured on RabbitMQ 4.0.5: three messages in two chunks report 2, not
 * 4), and that chunk may be a tracking chunk (a consumer's `store_offset` on this stream),
 * which takes an offset but is never delivered. So the last chunk of messages is read for
 * its end: one subscription with credit 1 at offset spec `last`, which osiris resolves to
 * the last USER chunk, skipping any number of tracking chunks after it. Only a stream that
 * holds tracking chunks and no messages at all delivers nothing; osiris then waits for the
 * next chunk, so that case is known after `timeoutMs`, and answers 0. `member` says how to
 * reach a member of the stream (as a read does).
 *
 * Both are asked on the stream's leader, though reads go to a replica: a member delivers only
 * chunks it knows to be committed, and a replica learns that from the leader, later (a node
 * just thawed, or busy, may be thousands of messages behind), so a replica's end can fall short
 * of messages already confirmed to their producers. With no leader to ask (one is being
 * elected), it fails retriable, as Kafka's `endOffsets` does without a partition leader,
 * rather than answer a replica's end.
 */
export async function endOffset(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
  member: MemberReach = {},
): Promise<bigint> {
  return chunkEnd(await lastChunk(params, stream, timeoutMs, member));
}

/**
 * The last chunk of messages `endOffset` reads for the stream's end (whole, on the leader);
 * undefined when the stream holds none.
 */
export async function lastChunk(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
  member: MemberReach = {},
): Promise<SourceChunk | undefined> {
  const { committedChunkId } = await streamStats(params, stream, timeoutMs, member);
  if (committedChunkId < 0n) return undefined;
  return firstChunk(params, { stream, from: 'last', role: 'leader', ...member }, timeoutMs);
}

/** One past the last offset of `chunk`, the stream's last; 0 without one. */
export function chunkEnd(chunk: SourceChunk | undefined): bigint {
  return chunk === undefined ? 0n : chunk.firstOffset + BigInt(chunk.count);
}
