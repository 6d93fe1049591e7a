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
  let size = BATCH_EXTRA_OVERHEAD;
  for (const message of messages) size += BATCH_RECORD_OVERHEAD + message.length;
  return size;
}
