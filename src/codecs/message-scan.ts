/**
 * The per-message hot path: find the body and the creation time of an AMQP 1.0 message
 * without decoding it.
 *
 * `scanMessage` walks the section descriptors and skips every section by its size fields;
 * only the properties section is entered, to read creation-time (field 9). It allocates
 * nothing (results go into a caller-owned `MessageScan` that is reused for every message),
 * reads bytes directly instead of creating a DataView per call, and uses plain functions with
 * number arguments so V8 keeps every call site monomorphic. It checks the framing (section
 * order, sizes, known format codes) but not the content of skipped sections; use
 * `decodeMessage` to validate a message fully.
 */
import { CodecError, hex } from './codec-error.js';
import { Code, Section } from './format-codes.js';
import { MAX_DEPTH } from './amqp-value.js';
import {
  readSectionDescriptor,
  readU32,
  sectionBodyOf,
  sectionCodeOf,
  sectionMayFollow,
} from './section-descriptor.js';

/** What `bodyStart`/`bodyEnd` of a `MessageScan` point at. */
export const BodyKind = {
  /** No body section: bodyStart = bodyEnd = the message start. */
  None: 0,
  /** The payload of the first data section. */
  Data: 1,
  /** The payload (raw bytes or UTF-8 text) of an amqp-value holding a binary or a string. */
  ValuePayload: 2,
  /**
   * The encoded AMQP value (constructor included) of an amqp-value of any other type, or of
   * the first amqp-sequence's list: decode it with `decodeAmqpValue(bytes, start, end)`.
   */
  Encoded: 3,
} as const;

/** Reusable result of `scanMessage`; create once with `createMessageScan()`. */
export interface MessageScan {
  /** Start of the body bytes (see `bodyKind`). */
  bodyStart: number;
  /** End (exclusive) of the body bytes. */
  bodyEnd: number;
  /** Number of data sections in the message. */
  dataSections: number;
  /** properties.creation-time in epoch ms; NaN when there are no properties or it is null. */
  creationTime: number;
  /** One of `BodyKind`. */
  bodyKind: number;
}

export function createMessageScan(): MessageScan {
  return { bodyStart: 0, bodyEnd: 0, dataSections: 0, creationTime: NaN, bodyKind: BodyKind.None };
}

/**
 * Scans the message `bytes[start, end)` into `out`. Throws CodecError on malformed framing,
 * its position counted from `start`.
 */
export function scanMessage(bytes: Uint8Array, start: number, end: number, out: MessageScan): void {
  try {
    walk(bytes, start, end, out, null);
  } catch (error) {
    throw error instanceof CodecError ? error.relativeTo(start) : error;
  }
}

/**
 * Views (no copies) of the payloads of all data sections of the message `bytes[start, end)`,
 * in order. Not for the hot path: it allocates the array and one view per section.
 */
export function dataSections(bytes: Uint8Array, start = 0, end = bytes.length): Uint8Array[] {
  const sink: Uint8Array[] = [];
  walk(bytes, start, end, createMessageScan(), sink);
  return sink;
}

function walk(
  bytes: Uint8Array,
  start: number,
  end: number,
  out: MessageScan,
  sink: Uint8Array[] | null,
): void {
  if (!(start >= 0 && start <= end && end <= bytes.length)) {
    throw new CodecError(`invalid message range ${start}..${end} of ${bytes.length} bytes`, start);
  }
  out.bodyStart = start;
  out.bodyEnd = start;
  out.dataSections = 0;
  out.creationTime = NaN;
  out.bodyKind = BodyKind.None;
  let pos = start;
  let previous = 0;
  while (pos < end) {
    const packed = readSectionDescriptor(bytes, pos, end);
    const code = sectionCodeOf(packed);
    if (!sectionMayFollow(previous, code)) {
      throw new CodecError(`message section ${hex(code)} may not follow ${hex(previous)}`, pos);
    }
    previous = code;
    pos = sectionBodyOf(packed);
    const format = pos < end ? (bytes[pos] as number) : -1;
    if (code === Section.Data) {
      if (format !== Code.Vbin8 && format !== Code.Vbin32) {
        throw new CodecError('data section is not binary', pos);
      }
      const payloadEnd = skipValue(bytes, pos, end, 0);
      const payloadStart = payloadEnd - payloadLength(bytes, pos);
      if (out.dataSections === 0) setBody(out, payloadStart, payloadEnd, BodyKind.Data);
      out.dataSections++;
      if (sink !== null) sink.push(bytes.subarray(payloadStart, payloadEnd));
      pos = payloadEnd;
    } else if (code === Section.Properties) {
      pos = scanProperties(bytes, pos, end, out);
    } else if (code === Section.AmqpValue) {
      const valueEnd = skipValue(bytes, pos, end, 0);
      if (isBinaryOrString(format)) {
        setBody(out, valueEnd - payloadLength(bytes, pos), valueEnd, BodyKind.ValuePayload);
      } else {
        setBody(out, pos, valueEnd, BodyKind.Encoded);
      }
      pos = valueEnd;
    } else {
      const isMap =
        code !== Section.Header && code !== Section.Properties && code !== Section.AmqpSequence;
      if (!(isMap ? isMapCode(format) : isListCode(format))) {
        throw new CodecError(`section ${hex(code)} is not a ${isMap ? 'map' : 'list'}`, pos);
      }
      const sectionEnd = skipValue(bytes, pos, end, 0);
      if (code === Section.AmqpSequence && out.bodyKind === BodyKind.None) {
        setBody(out, pos, sectionEnd, BodyKind.Encoded);
      }
      pos = sectionEnd;
    }
  }
}

function setBody(out: MessageScan, start: number, end: number, kind: number): void {
  out.bodyStart = start;
  out.bodyEnd = end;
  out.bodyKind = kind;
}

/** Reads creation-time (field 9) of the properties list at `pos`; returns the list's end. */
function scanProperties(bytes: Uint8Array, pos: number, end: number, out: MessageScan): number {
  const format = pos < end ? (bytes[pos] as number) : -1;
  if (format === Code.List0) return pos + 1;
  if (format !== Code.List8 && format !== Code.List32) {
    throw new CodecError('properties section is not a list', pos);
  }
  const listEnd = skipValue(bytes, pos, end, 0);
  const count = format === Code.List8 ? (bytes[pos + 2] as number) : readU32(bytes, pos + 5);
  let field = format === Code.List8 ? pos + 3 : pos + 9;
  const fields = count < 10 ? count : 10;
  for (let i = 0; i < fields; i++) {
    if (i < 9) {
      // Most fields before creation-time are null: skip those without a call.
      field =
        bytes[field] === Code.Null && field < listEnd
          ? field + 1
          : skipValue(bytes, field, listEnd, 0);
      continue;
    }
    const code = field < listEnd ? (bytes[field] as number) : -1;
    if (code === Code.Timestamp && field + 9 <= listEnd) {
      // Signed high word (`| 0`), unsigned low word: exact for any realistic timestamp.
      const high = readU32(bytes, field + 1) | 0;
      out.creationTime = high * 0x1_0000_0000 + readU32(bytes, field + 5);
    } else if (code !== Code.Null) {
      throw new CodecError('properties.creation-time must be a timestamp', field);
    }
  }
  return listEnd;
}

/** Length of the payload of the vbin/str value at `pos` (already validated by skipValue). */
function payloadLength(bytes: Uint8Array, pos: number): number {
  return (bytes[pos] as number) < 0xb0 ? (bytes[pos + 1] as number) : readU32(bytes, pos + 1);
}

function isBinaryOrString(format: number): boolean {
  return (
    format === Code.Vbin8 || format === Code.Vbin32 || format === Code.Str8 || format === Code.Str32
  );
}

function isListCode(format: number): boolean {
  return format === Code.List0 || format === Code.List8 || format === Code.List32;
}

function isMapCode(format: number): boolean {
  return format === Code.Map8 || format === Code.Map32;
}

/**
 * For each format code: the number of value bytes after it (fixed-width types), -1 or -4 for
 * a 1- or 4-byte size prefix (variable, compound and array types), or UNKNOWN.
 */
const UNKNOWN = 127;
const WIDTHS = ((): Int8Array => {
  const widths = new Int8Array(256).fill(UNKNOWN);
  for (const code of [Code.Null, Code.True, Code.False, Code.Uint0, Code.Ulong0, Code.List0]) {
    widths[code] = 0;
  }
  for (const code of [Code.Ubyte, Code.Byte, Code.SmallUint, Code.SmallUlong]) widths[code] = 1;
  for (const code of [Code.SmallInt, Code.SmallLong, Code.Boolean]) widths[code] = 1;
  for (const code of [Code.Ushort, Code.Short]) widths[code] = 2;
  for (const code of [Code.Uint, Code.Int, Code.Float, Code.Char, Code.Decimal32]) widths[code] = 4;
  for (const code of [Code.Ulong, Code.Long, Code.Double, Code.Timestamp, Code.Decimal64]) {
    widths[code] = 8;
  }
  for (const code of [Code.Decimal128, Code.Uuid]) widths[code] = 16;
  for (const code of [Code.Vbin8, Code.Str8, Code.Sym8, Code.List8, Code.Map8, Code.Array8]) {
    widths[code] = -1;
  }
  for (const code of [Code.Vbin32, Code.Str32, Code.Sym32, Code.List32, Code.Map32]) {
    widths[code] = -4;
  }
  widths[Code.Array32] = -4;
  return widths;
})();

/** Returns the end of the encoded value at `pos`, checking only its framing. */
export function skipValue(bytes: Uint8Array, pos: number, end: number, depth: number): number {
  if (pos >= end) throw new CodecError('truncated: expected a format code', pos);
  const code = bytes[pos] as number;
  if (code === Code.Described) {
    if (depth >= MAX_DEPTH) throw new CodecError(`nesting deeper than ${MAX_DEPTH}`, pos);
    const descriptorEnd = skipValue(bytes, pos + 1, end, depth + 1);
    return skipValue(bytes, descriptorEnd, end, depth + 1);
  }
  const width = WIDTHS[code] as number;
  if (width === UNKNOWN) throw new CodecError(`unknown AMQP format code ${hex(code)}`, pos);
  if (width >= 0) {
    if (width > end - pos - 1) throw new CodecError(`truncated ${hex(code)} value`, pos);
    return pos + 1 + width;
  }
  const sizeBytes = -width;
  if (sizeBytes > end - pos - 1) throw new CodecError(`truncated ${hex(code)} size`, pos);
  const size = sizeBytes === 1 ? (bytes[pos + 1] as number) : readU32(bytes, pos + 1);
  const valueEnd = pos + 1 + sizeBytes + size;
  if (valueEnd > end) {
    throw new CodecError(`${hex(code)} value of ${size} bytes runs past the end`, pos);
  }
  // Compound and array sizes include their count field.
  if (code >= Code.List8 && size < sizeBytes) {
    throw new CodecError(`compound size ${size} too small for its count`, pos);
  }
  return valueEnd;
}
