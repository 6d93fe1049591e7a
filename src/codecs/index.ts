/**
 * The codecs: AMQP 1.0 values and messages, the per-message scanner, canonical msgpack for
 * result sections, and the stream protocol's sub-entry batches. Everything else in this
 * folder is internal.
 */

// Errors: every decode failure (and every refused encode) is a CodecError with a byte offset.
export { CodecError } from './codec-error.js';

// AMQP 1.0 values: the TypeScript representation and its tagged-value helpers (amqp.ulong(…)).
export type {
  AmqpArray,
  AmqpArrayElementType,
  AmqpDecimal,
  AmqpDescribed,
  AmqpTaggedBigint,
  AmqpTaggedNumber,
  AmqpTaggedString,
  AmqpTyped,
  AmqpValue,
} from './amqp-value.js';
export * as amqp from './amqp-constructors.js';
export { encodeAmqpValue } from './amqp-encoder.js';
export { decodeAmqpValue } from './amqp-decoder.js';

// AMQP 1.0 messages: full encode/decode of every section.
export type {
  AmqpAnnotations,
  AmqpApplicationProperties,
  AmqpBody,
  AmqpHeader,
  AmqpMessage,
  AmqpMessageId,
  AmqpProperties,
} from './amqp-message.js';
export { decodeMessage, encodeMessage } from './amqp-message.js';

// The hot path: body bounds and creation time without decoding; data section views.
export type { MessageScan } from './message-scan.js';
export { BodyKind, createMessageScan, dataSections, scanMessage } from './message-scan.js';

// Canonical msgpack for aggregate values (sorted keys: equal values, equal bytes).
export { decodeCanonical, encodeCanonical } from './canonical-msgpack.js';

// RabbitMQ stream sub-entry batches (several messages under one publishing id).
export type { SubEntryBatch, SubEntryCompression, SubEntryRecord } from './sub-entry.js';
export {
  DEFAULT_MAX_UNCOMPRESSED_BYTES,
  decodeSubEntryBatch,
  encodeSubEntryBatch,
  subEntrySize,
  walkSubEntryBatch,
} from './sub-entry.js';
