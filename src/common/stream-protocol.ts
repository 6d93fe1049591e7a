import { ConfigError } from './errors.js';

/**
 * The stream protocol's numbers that both brokers share (the embedded one in src/memory
 * reports the same codes as RabbitMQ): response codes (PROTOCOL.adoc "Response codes"), what
 * to call them in an error, which of them may clear by themselves, and the protocol's limits.
 */
interface ResponseCode {
  readonly name: string;
  /**
   * Whether a publish, a publisher declaration or a resume-point query refused with this code
   * may succeed when the job resumes: the condition passes by itself (a leader election, a
   * restarted stream, a publisher the broker dropped and the target declares again). Every
   * other code stays until someone changes the broker's setup or the job's, so the job stops.
   * The README's table "Broker response codes" says what the job does for each.
   */
  readonly retriable: boolean;
}

const CODES: Readonly<Record<number, ResponseCode>> = {
  0x01: { name: 'ok', retriable: false },
  0x02: { name: 'stream does not exist', retriable: false },
  0x03: { name: 'subscription id already exists', retriable: false },
  0x04: { name: 'subscription id does not exist', retriable: false },
  0x05: { name: 'stream already exists', retriable: false },
  0x06: { name: 'stream not available', retriable: true },
  0x07: { name: 'SASL mechanism not supported', retriable: false },
  0x08: { name: 'authentication failure', retriable: false },
  0x09: { name: 'SASL error', retriable: false },
  0x0a: { name: 'SASL challenge', retriable: false },
  0x0b: { name: 'SASL authentication failure loopback', retriable: false },
  0x0c: { name: 'virtual host access failure', retriable: false },
  0x0d: { name: 'unknown frame', retriable: false },
  0x0e: { name: 'frame too large', retriable: false },
  0x0f: { name: 'internal error', retriable: true },
  0x10: { name: 'access refused', retriable: false },
  0x11: { name: 'precondition failed', retriable: false },
  0x12: { name: 'publisher does not exist', retriable: true },
  0x13: { name: 'no offset', retriable: false },
};

export const OK = 0x01;
export const STREAM_DOES_NOT_EXIST = 0x02;
export const STREAM_ALREADY_EXISTS = 0x05;
export const STREAM_NOT_AVAILABLE = 0x06;
export const FRAME_TOO_LARGE = 0x0e;
export const PRECONDITION_FAILED = 0x11;
export const PUBLISHER_DOES_NOT_EXIST = 0x12;

export function codeName(code: number): string {
  return CODES[code]?.name ?? `response code 0x${code.toString(16).padStart(2, '0')}`;
}

/** See `ResponseCode.retriable`; a code the table does not know is not retriable. */
export function isRetriableCode(code: number): boolean {
  return CODES[code]?.retriable ?? false;
}

/** A publishing id is a uint64 on the wire. */
export const MAX_PUBLISHING_ID = 0xffff_ffff_ffff_ffffn;
/** A sub-entry batch's RecordsInBatch is a uint16. */
export const MAX_BATCH_RECORDS = 0xffff;
/**
 * Producer names one stream tracks for deduplication (osiris keeps at most 255 writers in its
 * table and evicts the oldest): a name past that would lose its resume point.
 */
export const MAX_PRODUCERS_PER_STREAM = 255;

/**
 * A protocol string (a stream, producer, consumer or super stream name, a routing or binding
 * key, a property) is an int16 byte count then its UTF-8 bytes (PROTOCOL.adoc "Types").
 */
export const MAX_STRING_BYTES = 0x7fff;

/**
 * RabbitMQ refuses a producer name (publisher reference) or a consumer group name (consumer
 * reference) over 255 UTF-8 bytes with "precondition failed", and ignores a StoreOffset whose
 * offset reference is longer (measured on 4.0.5: 255 stored, 256 not).
 */
export const MAX_REFERENCE_BYTES = 255;

/**
 * Refuses `value` as `parameter` when its UTF-8 form is over MAX_STRING_BYTES: nothing could
 * send it, and no retry would help. Any shorter string is fine, whatever its characters.
 */
export function checkProtocolString(parameter: string, value: string): void {
  checkBytes(parameter, value, MAX_STRING_BYTES, 'a stream-protocol string');
}

/** As `checkProtocolString`, for a producer or consumer group name: MAX_REFERENCE_BYTES. */
export function checkReference(parameter: string, value: string): void {
  checkBytes(
    parameter,
    value,
    MAX_REFERENCE_BYTES,
    "RabbitMQ's limit for a producer or group name",
  );
}

/**
 * RabbitMQ keeps a stream's log in a directory named `<vhost>_<name>_<time>`, the time 19
 * digits and every character but ASCII letters, digits, `_`, `-` and `=` written `_`, one per
 * grapheme. A file name is at most 255 bytes (ext4, xfs, btrfs): on a longer one RabbitMQ
 * creates the stream, answers ok, and never starts it, so every later command answers "stream
 * not available" (code 6) for good. Measured on 4.0.5, vhost '/': 233 ASCII characters or 233
 * 'é' work, 234 of either do not.
 */
const MAX_DIRECTORY_NAME_BYTES = 255;
/** The directory name's two `_` and its 19-digit time. */
const DIRECTORY_NAME_OVERHEAD = 21;

/**
 * The longest stream name RabbitMQ serves on `vhost`, in UTF-8 bytes: 233 on '/'. Bytes, not
 * the broker's graphemes, never fewer than them: a name that fits fits on every broker,
 * whatever its Unicode tables, and stays an AMQP 0-9-1 queue name (at most 255 bytes).
 */
export function maxStreamNameBytes(vhost = '/'): number {
  const room =
    MAX_DIRECTORY_NAME_BYTES - DIRECTORY_NAME_OVERHEAD - Buffer.byteLength(vhost, 'utf8');
  return Math.max(0, room);
}

/**
 * Refuses `name` as `parameter` (a stream, super stream or partition name) unless RabbitMQ
 * serves a stream of that name on `vhost`: not empty and not `amq.`… (refused with
 * "precondition failed"), no CR or LF (dropped by the broker, which would then create or
 * delete the stream named without them) and at most `maxStreamNameBytes(vhost)` bytes. Every
 * entry point taking a stream name calls it before anything is sent; the embedded broker too.
 */
export function checkStreamName(parameter: string, name: string, vhost = '/'): void {
  if (typeof name !== 'string' || name === '') {
    throw new ConfigError(parameter, 'must be a non-empty string', name);
  }
  if (name.startsWith('amq.')) {
    throw new ConfigError(
      parameter,
      "must not start with 'amq.' (reserved by RabbitMQ)",
      shown(name),
    );
  }
  if (/[\r\n]/.test(name)) {
    throw new ConfigError(
      parameter,
      'must not contain CR or LF (RabbitMQ drops them and would use another name)',
      shown(name),
    );
  }
  checkBytes(
    parameter,
    name,
    maxStreamNameBytes(vhost),
    `on vhost '${vhost}': RabbitMQ stores a stream in a directory '<vhost>_<name>_<time>' of at most 255 bytes`,
  );
}

function checkBytes(parameter: string, value: string, limit: number, why: string): void {
  if (typeof value !== 'string') throw new ConfigError(parameter, 'must be a string', value);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes <= limit) return;
  throw new ConfigError(
    parameter,
    `must be at most ${limit} UTF-8 bytes (${why}), not ${bytes}`,
    shown(value),
  );
}

/** A long value's first 32 characters, so that an error stays readable; a pair never split. */
function shown(value: string): string {
  if (value.length <= 32) return value;
  const head = value.slice(0, 32);
  return `${/[\uD800-\uDBFF]$/.test(head) ? head.slice(0, -1) : head}…`;
}
