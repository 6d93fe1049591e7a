import type { SourceChunk } from '../../ports/ports.js';
import { CodecError } from '../../codecs/codec-error.js';
import { subEntrySize, walkSubEntryBatch } from '../../codecs/sub-entry.js';
import { SourceError } from '../../common/errors.js';

/**
 * Slices a raw stream-protocol Deliver frame into a `SourceChunk` without copying or decoding
 * the AMQP messages: message i is `bytes[starts[i], ends[i])` of the frame itself.
 *
 * Layout, from the protocol reference (rabbitmq-server
 * deps/rabbitmq_stream/docs/PROTOCOL.adoc, "Deliver") and osiris' chunk format
 * (rabbitmq/osiris src/osiris_log.erl, "Chunk format" / "Data Entry format"), big endian:
 *
 *   Deliver    key uint16 (8) | version uint16 (1, or 2 when the client declared it) |
 *              subscription id uint8 | committed chunk id uint64 (version 2 only) | chunk
 *   chunk      magic 4 bits (5) + chunk version 4 bits | chunk type int8 (0 = user) |
 *              entries uint16 | records uint32 | timestamp int64 (ms) | epoch uint64 |
 *              chunk id = first offset uint64 | data crc uint32 | data length uint32 |
 *              trailer length uint32 | bloom size uint8 + 3 reserved bytes      (48 bytes)
 *              then `data length` bytes of entries. The bloom filter and the trailer are
 *              NOT on the wire for consumers: osiris' `select_amount_to_send(user_data,
 *              ?CHNK_USER, ...)` skips the filter and sends the data only, while the header
 *              still declares their on-disk sizes.
 *   entry      simple: 0 bit + uint31 size | message (one offset)
 *              sub-batch: 1 bit + compression 3 bits + 4 reserved bits | records uint16 |
 *              uncompressed length uint32 | length uint32 | body; the (decompressed) body
 *              is `records` times uint32 size | message, one offset each, in order.
 *
 * osiris' comment gives chunk version 1, but RabbitMQ 4.0.5 sends 0 (measured): both are
 * accepted, the layout being the same.
 *
 * Offsets run contiguously over the records of the chunk in entry order, starting at the
 * chunk id — sub-batch records included (the stock client numbers those 0..n-1).
 */

/** A Deliver frame that does not follow the layout above; names stream and chunk offset. */
export class MalformedChunkError extends SourceError {
  override readonly name = 'MalformedChunkError';
  override readonly code = 'MALFORMED_CHUNK';
  constructor(stream: string, offset: bigint | undefined, reason: string) {
    super(stream, false, `malformed chunk: ${reason}; nothing of it was delivered`, offset);
  }
}

export const DELIVER_KEY = 0x0008;
const CHUNK_HEADER_BYTES = 48;
const CHUNK_MAGIC = 0x5;
const CHUNK_MAX_VERSION = 1;
const CHUNK_TYPE_USER = 0;

/** What one Deliver frame carries. */
export interface Delivery {
  readonly subscriptionId: number;
  /** The messages at or after `from`; undefined when the chunk holds none (or is not user data). */
  readonly chunk: SourceChunk | undefined;
  /** The chunk's first offset (its id), whether or not its messages are kept. */
  readonly chunkId: bigint;
  /** One past the chunk's last offset: where the next chunk starts. */
  readonly nextOffset: bigint;
}

/**
 * Parses `frame` (one Deliver frame without its uint32 size prefix, starting at the key) and
 * keeps the messages at offsets >= `from`. Throws `MalformedChunkError` on any inconsistency:
 * a half-parsed chunk would silently shift every later offset.
 */
export function parseDeliver(frame: Buffer, stream: string, from: bigint): Delivery {
  const fail = (offset: bigint | undefined, reason: string): never => {
    throw new MalformedChunkError(stream, offset, reason);
  };
  if (frame.length < 5) fail(undefined, `frame of ${frame.length} bytes is too short`);
  const key = frame.readUInt16BE(0);
  const version = frame.readUInt16BE(2);
  if (key !== DELIVER_KEY) fail(undefined, `frame key ${key} is not Deliver (${DELIVER_KEY})`);
  if (version !== 1 && version !== 2) fail(undefined, `unknown Deliver version ${version}`);
  const subscriptionId = frame.readUInt8(4);
  const h = version === 2 ? 13 : 5;
  if (frame.length < h + CHUNK_HEADER_BYTES) {
    fail(undefined, `frame of ${frame.length} bytes is shorter than a chunk header`);
  }
  const firstOffset = frame.readBigUInt64BE(h + 24);
  const magicVersion = frame.readUInt8(h);
  if (magicVersion >> 4 !== CHUNK_MAGIC || (magicVersion & 0xf) > CHUNK_MAX_VERSION) {
    fail(firstOffset, `magic/version byte 0x${magicVersion.toString(16)} is not 0x50 or 0x51`);
  }
  const chunkType = frame.readInt8(h + 1);
  const numEntries = frame.readUInt16BE(h + 2);
  const numRecords = frame.readUInt32BE(h + 4);
  const timestamp = Number(frame.readBigInt64BE(h + 8));
  const dataLength = frame.readUInt32BE(h + 36);
  const dataStart = h + CHUNK_HEADER_BYTES;
  const dataEnd = dataStart + dataLength;
  const nextOffset = firstOffset + BigInt(numRecords);
  if (dataEnd > frame.length) {
    fail(firstOffset, `data length ${dataLength} runs past the frame (${frame.length} bytes)`);
  }
  const skip = from > firstOffset ? from - firstOffset : 0n;
  if (chunkType !== CHUNK_TYPE_USER || skip >= BigInt(numRecords)) {
    return { subscriptionId, chunk: undefined, chunkId: firstOffset, nextOffset };
  }
  const skipped = Number(skip);
  const count = numRecords - skipped;
  const starts = new Uint32Array(count);
  const ends = new Uint32Array(count);
  // Set only when a compressed sub-batch puts messages outside the frame (see `compact`).
  let sources: Buffer[] | undefined;
  let record = 0;
  let p = dataStart;
  const keep = (source: Buffer, start: number, end: number): void => {
    if (record >= numRecords) fail(firstOffset, `more records than the ${numRecords} declared`);
    const i = record - skipped;
    record++;
    if (i < 0) return;
    starts[i] = start;
    ends[i] = end;
    if (source !== frame) sources ??= new Array<Buffer>(count).fill(frame);
    if (sources !== undefined) sources[i] = source;
  };
  // One Buffer view per inflated batch (not per record), for `compact` to copy from.
  let inflatedData: Uint8Array | undefined;
  let inflated = frame;
  const keepRecord = (data: Uint8Array, start: number, end: number): void => {
    if (data !== frame && data !== inflatedData) {
      inflatedData = data;
      inflated = Buffer.from(data.buffer, data.byteOffset, data.length);
    }
    keep(data === frame ? frame : inflated, start, end);
  };
  for (let entry = 0; entry < numEntries; entry++) {
    if (p + 4 > dataEnd) fail(firstOffset, `entry ${entry} of ${numEntries} runs past the data`);
    const flags = frame[p] as number;
    if ((flags & 0x80) === 0) {
      const size = frame.readUInt32BE(p);
      p += 4;
      if (p + size > dataEnd)
        fail(firstOffset, `entry ${entry} of ${size} bytes runs past the data`);
      keep(frame, p, p + size);
      p += size;
      continue;
    }
    // A sub-entry batch: its layout and checks are the codec's; records come back as bounds
    // in the frame (copy-free) or, for gzip, in the inflated data.
    try {
      const size = subEntrySize(frame, p, dataEnd);
      walkSubEntryBatch(frame, p, p + size, keepRecord);
      p += size;
    } catch (cause) {
      if (!(cause instanceof CodecError)) throw cause;
      fail(firstOffset, `sub-batch entry ${entry}: ${cause.message}`);
    }
  }
  if (record !== numRecords) {
    fail(firstOffset, `${record} records found, ${numRecords} declared`);
  }
  const chunk: SourceChunk =
    sources === undefined
      ? { firstOffset: firstOffset + skip, timestamp, count, bytes: frame, starts, ends }
      : compact(sources, firstOffset + skip, timestamp, starts, ends);
  return { subscriptionId, chunk, chunkId: firstOffset, nextOffset };
}

/**
 * The port wants one backing buffer per chunk; a gzip sub-batch decompresses into its own.
 * Copies every message into a fresh buffer — only for chunks that had to be decompressed
 * anyway, so the common path stays copy-free.
 */
function compact(
  sources: readonly Buffer[],
  firstOffset: bigint,
  timestamp: number,
  starts: Uint32Array,
  ends: Uint32Array,
): SourceChunk {
  const count = starts.length;
  let total = 0;
  for (let i = 0; i < count; i++) total += (ends[i] as number) - (starts[i] as number);
  const bytes = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const start = starts[i] as number;
    const end = ends[i] as number;
    (sources[i] as Buffer).copy(bytes, at, start, end);
    starts[i] = at;
    at += end - start;
    ends[i] = at;
  }
  return { firstOffset, timestamp, count, bytes, starts, ends };
}
