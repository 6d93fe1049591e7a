/**
 * The stream protocol's numbers that both brokers share (the embedded one in src/memory
 * reports the same codes as RabbitMQ): response codes (PROTOCOL.adoc "Response codes"), what
 * to call them in an error, which of them may clear by themselves, and the protocol's limits.
 */
const NAMES: Readonly<Record<number, string>> = {
  0x01: 'ok',
  0x02: 'stream does not exist',
  0x03: 'subscription id already exists',
  0x04: 'subscription id does not exist',
  0x05: 'stream already exists',
  0x06: 'stream not available',
  0x07: 'SASL mechanism not supported',
  0x08: 'authentication failure',
  0x09: 'SASL error',
  0x0a: 'SASL challenge',
  0x0b: 'SASL authentication failure loopback',
  0x0c: 'virtual host access failure',
  0x0d: 'unknown frame',
  0x0e: 'frame too large',
  0x0f: 'internal error',
  0x10: 'access refused',
  0x11: 'precondition failed',
  0x12: 'publisher does not exist',
  0x13: 'no offset',
};

export const OK = 0x01;
export const STREAM_DOES_NOT_EXIST = 0x02;
export const STREAM_ALREADY_EXISTS = 0x05;
export const STREAM_NOT_AVAILABLE = 0x06;
export const FRAME_TOO_LARGE = 0x0e;
export const INTERNAL_ERROR = 0x0f;
export const PUBLISHER_DOES_NOT_EXIST = 0x12;

/**
 * Publish errors that may clear by themselves: the stream is between leaders, the broker
 * hiccuped, or it dropped our publisher (which the target declares again).
 */
const RETRIABLE_PUBLISH = new Set([STREAM_NOT_AVAILABLE, INTERNAL_ERROR, PUBLISHER_DOES_NOT_EXIST]);

export function codeName(code: number): string {
  return NAMES[code] ?? `response code 0x${code.toString(16).padStart(2, '0')}`;
}

export function isRetriablePublishCode(code: number): boolean {
  return RETRIABLE_PUBLISH.has(code);
}

/** A publishing id is a uint64 on the wire. */
export const MAX_PUBLISHING_ID = 0xffff_ffff_ffff_ffffn;
/** A sub-entry batch's RecordsInBatch is a uint16. */
export const MAX_BATCH_RECORDS = 0xffff;
