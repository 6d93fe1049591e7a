import {
  FRAME_TOO_LARGE,
  MAX_BATCH_RECORDS,
  MAX_PUBLISHING_ID,
} from '../common/stream-protocol.js';

/**
 * How big a publish is on the wire, so the embedded broker refuses exactly the writes RabbitMQ
 * refuses. RabbitMQ closes the connection when a frame's size field exceeds frame_max - 4,
 * i.e. when the whole frame, its 4-byte size prefix included, is larger than frame_max.
 *
 * A publish frame (stream protocol, Publish v1, one entry) is:
 *   size u32, key u16, version u16, publisherId u8, entry count i32, publishingId u64 = 21 bytes
 * followed by the entry:
 *   plain message: length i32 + message bytes
 *   sub-entry batch: type/compression u8, record count u16, uncompressed size u32,
 *                    data size u32 = 11 bytes, then per record length u32 + message bytes
 */

/** RabbitMQ's default `stream.frame_max`. */
export const DEFAULT_FRAME_MAX = 1_048_576;

/** Frame bytes outside the message in a one-message publish: 21 header + 4 length. */
const PLAIN_FRAME_OVERHEAD = 25;

/** A plain entry's publishing id (8 bytes) and message size (4). */
const PLAIN_ENTRY_OVERHEAD = 12;

/** A batch spends 11 bytes on its entry header where a plain message spends 4 on its length. */
const BATCH_EXTRA_OVERHEAD = 11 - 4;
const BATCH_RECORD_OVERHEAD = 4;

/** Largest `writeSize` a broker with this frame_max accepts in one publish. */
export function maxWriteBytes(frameMax: number): number {
  return frameMax - PLAIN_FRAME_OVERHEAD;
}

/**
 * Bytes a write counts against `Target.maxWriteBytes`: a plain message counts its own length,
 * a sub-entry batch its records plus their framing. `writeSize(m) <= maxWriteBytes(f)` holds
 * exactly when the publish frame fits in frame_max `f`.
 */
export function writeSize(messages: readonly Uint8Array[]): number {
  if (messages.length === 1) return messages[0]?.length ?? 0;
  let records = 0;
  for (const message of messages) records += batchRecordSize(message.length);
  return batchSize(records);
}

/** What one message adds to a sub-entry batch's `writeSize`. */
export function batchRecordSize(length: number): number {
  return BATCH_RECORD_OVERHEAD + length;
}

/** `writeSize` of a sub-entry batch (two messages or more) whose records add up to `records`. */
export function batchSize(records: number): number {
  return BATCH_EXTRA_OVERHEAD + records;
}

/**
 * Whether plain messages of these byte lengths, each under its own publishing id, fit in one
 * Publish frame whose single plain write may take `maxBytes` (see `maxWriteBytes`): each
 * further entry adds its publishing id and size (12 bytes) to the frame.
 */
export function plainEntriesFit(lengths: readonly number[], maxBytes: number): boolean {
  let size = -PLAIN_ENTRY_OVERHEAD;
  for (const length of lengths) size += PLAIN_ENTRY_OVERHEAD + length;
  return size <= maxBytes;
}

export interface WriteRefusal {
  readonly reason: string;
  readonly code?: number;
}

/**
 * Why a write breaks the stream protocol's limits, or `undefined` when it does not: both
 * brokers' targets refuse such a write before anything is stored, for the same reasons.
 */
export function writeRefusal(
  publishingId: bigint,
  messages: readonly Uint8Array[],
  maxBytes: number,
): WriteRefusal | undefined {
  if (publishingId < 0n || publishingId > MAX_PUBLISHING_ID) {
    return { reason: 'the publishing id must fit in an unsigned 64-bit integer' };
  }
  if (messages.length === 0) return { reason: 'a write must hold at least one message' };
  if (messages.length > MAX_BATCH_RECORDS) {
    return {
      reason: `a sub-entry batch holds at most ${MAX_BATCH_RECORDS} messages, given ${messages.length}`,
    };
  }
  const size = writeSize(messages);
  if (size > maxBytes) {
    return {
      reason: `the write takes ${size} bytes uncompressed, over the limit of ${maxBytes} per write`,
      code: FRAME_TOO_LARGE,
    };
  }
  return undefined;
}
