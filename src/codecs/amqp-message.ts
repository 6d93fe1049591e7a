/**
 * AMQP 1.0 messages (part 3 "Messaging", §3.2): the bare message plus its annotations.
 *
 * Sections are written in the order of §3.2 — header, delivery-annotations,
 * message-annotations, properties, application-properties, body, footer — each only when
 * present in the object, so equal inputs give equal bytes. Record entries are written in
 * `Object.keys` order (insertion order; integer-like keys first, as JavaScript orders them).
 * Absent list fields (header, properties) are written as null and trailing nulls are dropped;
 * on decode, null fields are left out, so defaults (priority 4, durable false…) are never
 * filled in and a message round-trips to exactly what was encoded.
 *
 * Decoded binary values, in particular the payloads of data sections, are `subarray` views of
 * the input bytes, not copies: copy them if the input buffer is reused. A data body with no
 * sections writes nothing, so it decodes as a message without a body.
 */
import { AmqpDecoder } from './amqp-decoder.js';
import { encodeWith, type AmqpEncoder } from './amqp-encoder.js';
import { symbol, timestamp, ubyte, uint } from './amqp-constructors.js';
import {
  isList,
  type AmqpTaggedBigint,
  type AmqpTaggedString,
  type AmqpValue,
} from './amqp-value.js';
import { CodecError, hex } from './codec-error.js';
import { Code, Section } from './format-codes.js';
import {
  readSectionDescriptor,
  sectionBodyOf,
  sectionCodeOf,
  sectionMayFollow,
} from './section-descriptor.js';

/** Transport headers (§3.2.1). Numbers are ubyte (priority) and uint (ttl, deliveryCount). */
export interface AmqpHeader {
  durable?: boolean;
  priority?: number;
  ttl?: number;
  firstAcquirer?: boolean;
  deliveryCount?: number;
}

/** message-id and correlation-id: ulong, uuid, binary or string (§3.2.4). */
export type AmqpMessageId = string | Uint8Array | AmqpTaggedBigint | AmqpTaggedString;

/** Immutable properties of the bare message (§3.2.4). Timestamps are epoch milliseconds. */
export interface AmqpProperties {
  messageId?: AmqpMessageId;
  userId?: Uint8Array;
  to?: string;
  subject?: string;
  replyTo?: string;
  correlationId?: AmqpMessageId;
  /** A symbol on the wire. */
  contentType?: string;
  /** A symbol on the wire. */
  contentEncoding?: string;
  absoluteExpiryTime?: number;
  creationTime?: number;
  groupId?: string;
  /** A uint. */
  groupSequence?: number;
  replyToGroupId?: string;
}

/**
 * Delivery annotations, message annotations and footer: a map with symbol keys (string keys
 * are accepted on decode too, as some clients write them).
 */
export type AmqpAnnotations = Record<string, AmqpValue>;

/**
 * Application properties: a map with string keys and simple values (no list, map or array,
 * §3.2.5). The encoder rejects compound values; the decoder accepts whatever it finds.
 */
export type AmqpApplicationProperties = Record<string, AmqpValue>;

/** One or more data sections, one or more amqp-sequence sections, or one amqp-value. */
export type AmqpBody =
  | { type: 'data'; sections: readonly Uint8Array[] }
  | { type: 'sequence'; sections: readonly (readonly AmqpValue[])[] }
  | { type: 'value'; value: AmqpValue };

export interface AmqpMessage {
  header?: AmqpHeader;
  deliveryAnnotations?: AmqpAnnotations;
  messageAnnotations?: AmqpAnnotations;
  properties?: AmqpProperties;
  applicationProperties?: AmqpApplicationProperties;
  body?: AmqpBody;
  footer?: AmqpAnnotations;
}

/** Encodes a message; deterministic (same input, same bytes). */
export function encodeMessage(message: AmqpMessage): Uint8Array {
  return encodeWith((encoder) => {
    writeMessage(encoder, message);
  });
}

function writeMessage(encoder: AmqpEncoder, message: AmqpMessage): void {
  const { header, properties, body } = message;
  if (header !== undefined) {
    encoder.writeSectionDescriptor(Section.Header);
    writeFields(encoder, [
      header.durable,
      header.priority === undefined ? undefined : ubyte(header.priority),
      header.ttl === undefined ? undefined : uint(header.ttl),
      header.firstAcquirer,
      header.deliveryCount === undefined ? undefined : uint(header.deliveryCount),
    ]);
  }
  writeAnnotations(encoder, Section.DeliveryAnnotations, message.deliveryAnnotations);
  writeAnnotations(encoder, Section.MessageAnnotations, message.messageAnnotations);
  if (properties !== undefined) {
    encoder.writeSectionDescriptor(Section.Properties);
    writeFields(encoder, [
      properties.messageId,
      properties.userId,
      properties.to,
      properties.subject,
      properties.replyTo,
      properties.correlationId,
      optional(properties.contentType, symbol),
      optional(properties.contentEncoding, symbol),
      optional(properties.absoluteExpiryTime, timestamp),
      optional(properties.creationTime, timestamp),
      properties.groupId,
      optional(properties.groupSequence, uint),
      properties.replyToGroupId,
    ]);
  }
  if (message.applicationProperties !== undefined) {
    encoder.writeSectionDescriptor(Section.ApplicationProperties);
    encoder.writeRecord(message.applicationProperties, false, (key, value) => {
      if (!isSimple(value)) {
        throw encoder.error(`application property '${key}' must be a simple value`);
      }
    });
  }
  if (body !== undefined) writeBody(encoder, body);
  writeAnnotations(encoder, Section.Footer, message.footer);
}

function writeBody(encoder: AmqpEncoder, body: AmqpBody): void {
  switch (body.type) {
    case 'data':
      for (const section of body.sections) {
        if (!(section instanceof Uint8Array)) {
          throw encoder.error('a data section must be a Uint8Array');
        }
        encoder.writeSectionDescriptor(Section.Data);
        encoder.writeBinary(section);
      }
      return;
    case 'sequence':
      for (const section of body.sections) {
        encoder.writeSectionDescriptor(Section.AmqpSequence);
        encoder.writeList(section, 0);
      }
      return;
    case 'value':
      encoder.writeSectionDescriptor(Section.AmqpValue);
      encoder.writeValue(body.value);
      return;
    default:
      throw encoder.error(`unknown body type '${String((body as { type: unknown }).type)}'`);
  }
}

function writeAnnotations(
  encoder: AmqpEncoder,
  section: number,
  annotations: AmqpAnnotations | undefined,
): void {
  if (annotations === undefined) return;
  encoder.writeSectionDescriptor(section);
  encoder.writeRecord(annotations, true);
}

/** A composite's field list: undefined fields become null, trailing nulls are dropped. */
function writeFields(encoder: AmqpEncoder, fields: readonly (AmqpValue | undefined)[]): void {
  let count = fields.length;
  while (count > 0 && (fields[count - 1] === undefined || fields[count - 1] === null)) count--;
  if (count === 0) {
    encoder.writeByte(Code.List0);
    return;
  }
  const start = encoder.beginCompound8();
  for (let i = 0; i < count; i++) encoder.writeValue(fields[i] ?? null, 1);
  encoder.endCompound(start, count, Code.List8, Code.List32);
}

function optional<T>(value: T | undefined, wrap: (value: T) => AmqpValue): AmqpValue | undefined {
  return value === undefined ? undefined : wrap(value);
}

function isSimple(value: AmqpValue): boolean {
  if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return true;
  if (Array.isArray(value) || value instanceof Map) return false;
  return (value as { type: string }).type !== 'array';
}

/**
 * Decodes the message in `bytes[start, end)`. Throws CodecError (with the byte offset) on
 * anything that is not a well-formed message: truncation, unknown or out-of-order sections,
 * a field of the wrong type, bytes left over.
 */
export function decodeMessage(bytes: Uint8Array, start = 0, end = bytes.length): AmqpMessage {
  try {
    return decodeSections(bytes, start, end);
  } catch (error) {
    // Positions count from the message's first byte, as scanMessage's do.
    throw error instanceof CodecError ? error.relativeTo(start) : error;
  }
}

/**
 * The application properties of the message in `bytes[start, end)`, undefined when it has
 * none: only the sections before them are read (and not checked beyond their framing), the
 * body never. For a reader that routes on properties alone, at a fraction of `decodeMessage`'s
 * cost. Throws CodecError on a malformed section before the body.
 */
export function decodeApplicationProperties(
  bytes: Uint8Array,
  start = 0,
  end = bytes.length,
): AmqpApplicationProperties | undefined {
  try {
    const decoder = new AmqpDecoder(bytes, start, end);
    let previous = 0;
    while (decoder.pos < end) {
      const at = decoder.pos;
      const packed = readSectionDescriptor(bytes, at, end);
      const code = sectionCodeOf(packed);
      if (code > Section.ApplicationProperties) return undefined;
      if (!sectionMayFollow(previous, code)) {
        throw new CodecError(`message section ${hex(code)} may not follow ${hex(previous)}`, at);
      }
      previous = code;
      decoder.pos = sectionBodyOf(packed);
      const value = decoder.readValue();
      if (code === Section.ApplicationProperties) {
        return toRecord(value, 'application-properties', false, at);
      }
    }
    return undefined;
  } catch (error) {
    throw error instanceof CodecError ? error.relativeTo(start) : error;
  }
}

function decodeSections(bytes: Uint8Array, start: number, end: number): AmqpMessage {
  const decoder = new AmqpDecoder(bytes, start, end);
  const message: AmqpMessage = {};
  let previous = 0;
  while (decoder.pos < end) {
    const at = decoder.pos;
    const packed = readSectionDescriptor(bytes, at, end);
    const code = sectionCodeOf(packed);
    if (!sectionMayFollow(previous, code)) {
      throw new CodecError(`message section ${hex(code)} may not follow ${hex(previous)}`, at);
    }
    previous = code;
    decoder.pos = sectionBodyOf(packed);
    const value = decoder.readValue();
    readSection(message, code, value, at);
  }
  return message;
}

function readSection(message: AmqpMessage, code: number, value: AmqpValue, at: number): void {
  switch (code) {
    case Section.Header:
      message.header = readHeader(fieldList(value, 'header', at), at);
      return;
    case Section.DeliveryAnnotations:
      message.deliveryAnnotations = toRecord(value, 'delivery-annotations', true, at);
      return;
    case Section.MessageAnnotations:
      message.messageAnnotations = toRecord(value, 'message-annotations', true, at);
      return;
    case Section.Properties:
      message.properties = readProperties(fieldList(value, 'properties', at), at);
      return;
    case Section.ApplicationProperties:
      message.applicationProperties = toRecord(value, 'application-properties', false, at);
      return;
    case Section.Data: {
      if (!(value instanceof Uint8Array)) throw new CodecError('data section is not binary', at);
      const body = message.body as { sections: Uint8Array[] } | undefined;
      if (body === undefined) message.body = { type: 'data', sections: [value] };
      else body.sections.push(value);
      return;
    }
    case Section.AmqpSequence: {
      if (!isList(value)) throw new CodecError('amqp-sequence section is not a list', at);
      const body = message.body as { sections: (readonly AmqpValue[])[] } | undefined;
      if (body === undefined) message.body = { type: 'sequence', sections: [value] };
      else body.sections.push(value);
      return;
    }
    case Section.AmqpValue:
      message.body = { type: 'value', value };
      return;
    default:
      message.footer = toRecord(value, 'footer', true, at);
  }
}

function fieldList(value: AmqpValue, section: string, at: number): readonly AmqpValue[] {
  if (!isList(value)) throw new CodecError(`${section} section is not a list`, at);
  return value;
}

function readHeader(fields: readonly AmqpValue[], at: number): AmqpHeader {
  const header: AmqpHeader = {};
  const durable = fields[0] ?? null;
  if (durable !== null) header.durable = expectBoolean(durable, 'header.durable', at);
  const priority = fields[1] ?? null;
  if (priority !== null) header.priority = expectTagged(priority, 'ubyte', 'header.priority', at);
  const ttl = fields[2] ?? null;
  if (ttl !== null) header.ttl = expectTagged(ttl, 'uint', 'header.ttl', at);
  const firstAcquirer = fields[3] ?? null;
  if (firstAcquirer !== null) {
    header.firstAcquirer = expectBoolean(firstAcquirer, 'header.first-acquirer', at);
  }
  const deliveryCount = fields[4] ?? null;
  if (deliveryCount !== null) {
    header.deliveryCount = expectTagged(deliveryCount, 'uint', 'header.delivery-count', at);
  }
  return header;
}

function readProperties(fields: readonly AmqpValue[], at: number): AmqpProperties {
  const p: AmqpProperties = {};
  const field = (index: number): AmqpValue => fields[index] ?? null;
  if (field(0) !== null) p.messageId = expectMessageId(field(0), 'message-id', at);
  if (field(1) !== null) {
    const userId = field(1);
    if (!(userId instanceof Uint8Array)) throw wrongType('properties.user-id', 'binary', at);
    p.userId = userId;
  }
  if (field(2) !== null) p.to = expectString(field(2), 'properties.to', at);
  if (field(3) !== null) p.subject = expectString(field(3), 'properties.subject', at);
  if (field(4) !== null) p.replyTo = expectString(field(4), 'properties.reply-to', at);
  if (field(5) !== null) p.correlationId = expectMessageId(field(5), 'correlation-id', at);
  if (field(6) !== null) {
    p.contentType = expectTagged(field(6), 'symbol', 'properties.content-type', at);
  }
  if (field(7) !== null) {
    p.contentEncoding = expectTagged(field(7), 'symbol', 'properties.content-encoding', at);
  }
  if (field(8) !== null) {
    p.absoluteExpiryTime = expectTagged(field(8), 'timestamp', 'properties.absolute-expiry', at);
  }
  if (field(9) !== null) {
    p.creationTime = expectTagged(field(9), 'timestamp', 'properties.creation-time', at);
  }
  if (field(10) !== null) p.groupId = expectString(field(10), 'properties.group-id', at);
  if (field(11) !== null) {
    p.groupSequence = expectTagged(field(11), 'uint', 'properties.group-sequence', at);
  }
  if (field(12) !== null) {
    p.replyToGroupId = expectString(field(12), 'properties.reply-to-group-id', at);
  }
  return p;
}

function expectBoolean(value: AmqpValue, field: string, at: number): boolean {
  if (typeof value !== 'boolean') throw wrongType(field, 'boolean', at);
  return value;
}

function expectString(value: AmqpValue, field: string, at: number): string {
  if (typeof value !== 'string') throw wrongType(field, 'string', at);
  return value;
}

function expectTagged<T extends 'ubyte' | 'uint' | 'timestamp' | 'symbol'>(
  value: AmqpValue,
  type: T,
  field: string,
  at: number,
): T extends 'symbol' ? string : number {
  if (typeof value !== 'object' || value === null || (value as { type?: unknown }).type !== type) {
    throw wrongType(field, type, at);
  }
  return (value as unknown as { value: T extends 'symbol' ? string : number }).value;
}

function expectMessageId(value: AmqpValue, field: string, at: number): AmqpMessageId {
  if (typeof value === 'string' || value instanceof Uint8Array) return value;
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : 0;
  if (type === 'ulong' || type === 'uuid') return value as AmqpMessageId;
  throw wrongType(`properties.${field}`, 'ulong, uuid, binary or string', at);
}

function wrongType(field: string, expected: string, at: number): CodecError {
  return new CodecError(`${field} must be a ${expected}`, at);
}

/** A map section as a record; annotation keys are symbols (or strings), property keys strings. */
function toRecord(
  value: AmqpValue,
  section: string,
  symbolKeys: boolean,
  at: number,
): Record<string, AmqpValue> {
  if (!(value instanceof Map)) throw new CodecError(`${section} section is not a map`, at);
  const record: Record<string, AmqpValue> = {};
  for (const [key, entry] of value as ReadonlyMap<AmqpValue, AmqpValue>) {
    // Annotation keys are symbols per §3.2.10, but rhea writes footer keys as strings: take both.
    const name = symbolKeys ? (symbolName(key) ?? key) : key;
    if (typeof name !== 'string') {
      throw wrongType(`${section} key`, symbolKeys ? 'symbol' : 'string', at);
    }
    if (Object.prototype.hasOwnProperty.call(record, name)) {
      throw new CodecError(`${section} has the key '${name}' twice`, at);
    }
    // defineProperty, not assignment: a key named __proto__ must stay a plain entry.
    Object.defineProperty(record, name, {
      value: entry,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return record;
}

function symbolName(key: AmqpValue): string | undefined {
  return typeof key === 'object' && key !== null && (key as { type?: unknown }).type === 'symbol'
    ? (key as AmqpTaggedString).value
    : undefined;
}
