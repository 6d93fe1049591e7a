/**
 * Sub-entry batches of the RabbitMQ stream protocol: several messages in the slot of one
 * entry, stored and published under ONE publishing id.
 *
 * Layout (all integers big-endian), as written after the publishing id of a Publish frame and
 * as stored in a chunk's data entries:
 *
 *   EntryTypeAndCompression  uint8   bit 7 = 1 (sub-batch entry), bits 6-4 = compression
 *                                     (0 none, 1 gzip), bits 3-0 reserved (0)
 *   RecordsInBatch           uint16
 *   UncompressedDataSize     uint32  size of Data before compression
 *   DataSize                 uint32  size of Data as written
 *   Data                     RecordsInBatch x (uint32 size, message bytes), possibly gzipped
 *
 * Sources: rabbitmq/osiris src/osiris_log.erl ("SubBatchEntry (CHNK_USER)": `|1| Cmp | Rsvd |
 * Number of records | Uncompressed Length | Length | Body`); rabbitmq-server's stream reader
 * tests, which build `<<PublishingId:64, 1:1, CompressionType:3, 0:4, MessageCount:16,
 * UncompressedSize:32, BatchSize:32, Batch/binary>>`; and rabbitmq-stream-js-client
 * (requests/sub_entry_batch_publish_request), which writes `0x80 | compression << 4`, the count,
 * the sum of `4 + message size` as the uncompressed size, then each message as a uint32 size
 * followed by its bytes. The stream protocol reference (deps/rabbitmq_stream/docs/PROTOCOL.adoc)
 * defers to osiris for this structure.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe } from '../common/errors.js';
import { MAX_BATCH_RECORDS } from '../common/stream-protocol.js';
import { CodecError, hex } from './codec-error.js';
import { readU32 } from './section-descriptor.js';

export type SubEntryCompression = 'none' | 'gzip';

export interface SubEntryBatch {
  /** The messages, as views into the input when uncompressed, into the inflated data for gzip. */
  messages: Uint8Array[];
  compression: SubEntryCompression;
}

const HEADER_SIZE = 11;
const COMPRESSION_CODES: Record<SubEntryCompression, number> = { none: 0, gzip: 1 };
/** Inflating a gzip batch stops beyond this size unless the caller allows more. */
export const DEFAULT_MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024;

/** Encodes the messages as one sub-entry (from the type byte to the end of Data). */
export function encodeSubEntryBatch(
  messages: readonly Uint8Array[],
  compression: SubEntryCompression = 'none',
): Uint8Array {
  const code = COMPRESSION_CODES[compression] as number | undefined;
  if (code === undefined) {
    throw new CodecError(`cannot encode: unknown sub-entry compression '${compression}'`, 0);
  }
  if (messages.length > MAX_BATCH_RECORDS) {
    throw new CodecError(
      `cannot encode: ${messages.length} messages exceed ${MAX_BATCH_RECORDS} per batch`,
      0,
    );
  }
  let dataSize = 0;
  for (const message of messages) dataSize += 4 + message.length;
  if (dataSize > 0xffff_ffff) throw new CodecError('cannot encode: batch larger than 4 GiB', 0);
  const data = new Uint8Array(dataSize);
  const dataView = new DataView(data.buffer);
  let pos = 0;
  for (const message of messages) {
    dataView.setUint32(pos, message.length);
    data.set(message, pos + 4);
    pos += 4 + message.length;
  }
  const body = compression === 'gzip' ? gzipSync(data) : data;
  const out = new Uint8Array(HEADER_SIZE + body.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, 0x80 | (code << 4));
  view.setUint16(1, messages.length);
  view.setUint32(3, dataSize);
  view.setUint32(7, body.length);
  out.set(body, HEADER_SIZE);
  return out;
}

/**
 * Total size in bytes of the sub-entry starting at `start` (header plus Data), for walking
 * the entries of a chunk. Checks the entry type bit and that the entry fits before `end`.
 */
export function subEntrySize(bytes: Uint8Array, start = 0, end = bytes.length): number {
  if (!(start >= 0 && start <= end && end <= bytes.length)) {
    throw new CodecError(`invalid sub-entry range ${start}..${end} of ${bytes.length}`, start);
  }
  if (end - start < HEADER_SIZE) throw new CodecError('truncated sub-entry header', start);
  const type = bytes[start] as number;
  if ((type & 0x80) === 0) {
    throw new CodecError(`not a sub-entry batch: type byte ${hex(type)} has bit 7 clear`, start);
  }
  const dataSize = readU32(bytes, start + 7);
  if (dataSize > end - start - HEADER_SIZE) {
    throw new CodecError(`sub-entry data of ${dataSize} bytes runs past the end`, start + 7);
  }
  return HEADER_SIZE + dataSize;
}

/** Receives one record of a sub-entry batch: the message is `data[start, end)`. */
export type SubEntryRecord = (data: Uint8Array, start: number, end: number) => void;

/**
 * Walks the records of the sub-entry that fills `bytes[start, end)` exactly, allocating
 * nothing per record: `data` is `bytes` itself when uncompressed (so a reader can keep
 * message bounds in the chunk, copy-free) and the inflated Data for gzip. Returns the
 * compression. Throws CodecError on anything else: bad type byte, unsupported compression,
 * sizes that do not add up, gzip errors, more than `maxUncompressedBytes` inflated.
 */
export function walkSubEntryBatch(
  bytes: Uint8Array,
  start: number,
  end: number,
  record: SubEntryRecord,
  maxUncompressedBytes = DEFAULT_MAX_UNCOMPRESSED_BYTES,
): SubEntryCompression {
  const size = subEntrySize(bytes, start, end);
  if (start + size !== end) {
    throw new CodecError(`${end - start - size} bytes left after the sub-entry`, start + size);
  }
  const type = bytes[start] as number;
  const compressionCode = (type >> 4) & 0x07;
  if (compressionCode > 1) {
    throw new CodecError(`unsupported sub-entry compression ${compressionCode}`, start);
  }
  const compression: SubEntryCompression = compressionCode === 1 ? 'gzip' : 'none';
  const count = ((bytes[start + 1] as number) << 8) | (bytes[start + 2] as number);
  const uncompressedSize = readU32(bytes, start + 3);
  const dataStart = start + HEADER_SIZE;
  let data = bytes;
  let pos = dataStart;
  let dataEnd = end;
  // Error positions: inside the input when uncompressed; the Data field's start for gzip.
  let at = (position: number): number => position;
  if (compression === 'gzip') {
    if (uncompressedSize > maxUncompressedBytes) {
      throw new CodecError(
        `sub-entry claims ${uncompressedSize} uncompressed bytes, over the limit of ${maxUncompressedBytes}`,
        start + 3,
      );
    }
    try {
      const inflated = gunzipSync(bytes.subarray(dataStart, end), {
        maxOutputLength: Math.max(uncompressedSize, 1),
      });
      // A plain Uint8Array view, so callers see the same type with and without compression.
      data = new Uint8Array(inflated.buffer, inflated.byteOffset, inflated.length);
    } catch (error) {
      throw new CodecError(`sub-entry gzip data is invalid: ${describe(error)}`, dataStart);
    }
    pos = 0;
    dataEnd = data.length;
    at = () => dataStart;
  }
  if (dataEnd - pos !== uncompressedSize) {
    throw new CodecError(
      `sub-entry data is ${dataEnd - pos} bytes, its header says ${uncompressedSize}`,
      start + 3,
    );
  }
  if (count * 4 > dataEnd - pos) {
    throw new CodecError(`sub-entry claims ${count} records in ${dataEnd - pos} bytes`, start + 1);
  }
  for (let i = 0; i < count; i++) {
    if (dataEnd - pos < 4) throw new CodecError('truncated record size', at(pos));
    const length = readU32(data, pos);
    if (length > dataEnd - pos - 4) {
      throw new CodecError(`record of ${length} bytes runs past the batch`, at(pos));
    }
    record(data, pos + 4, pos + 4 + length);
    pos += 4 + length;
  }
  if (pos !== dataEnd) {
    throw new CodecError(`${dataEnd - pos} bytes left after ${count} records`, at(pos));
  }
  return compression;
}

/**
 * Decodes the sub-entry that fills `bytes[start, end)` exactly into views of its messages
 * (see `walkSubEntryBatch` for the checks).
 */
export function decodeSubEntryBatch(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
  maxUncompressedBytes = DEFAULT_MAX_UNCOMPRESSED_BYTES,
): SubEntryBatch {
  const messages: Uint8Array[] = [];
  const compression = walkSubEntryBatch(
    bytes,
    start,
    end,
    (data, from, to) => messages.push(data.subarray(from, to)),
    maxUncompressedBytes,
  );
  return { messages, compression };
}
