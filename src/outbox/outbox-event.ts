import { encode as encodeMsgpack } from '@msgpack/msgpack';
import { ConfigError } from '../common/errors.js';
import { jsonText } from '../common/json-text.js';

/** The body of an outbox row: exactly one of `json`, `msgpack` or `bytes`. */
export type OutboxBody =
  | { readonly json: unknown; readonly msgpack?: never; readonly bytes?: never }
  | { readonly msgpack: unknown; readonly json?: never; readonly bytes?: never }
  | {
      readonly bytes: Uint8Array;
      /** The message's content type; default 'application/octet-stream'. */
      readonly contentType?: string;
      readonly json?: never;
      readonly msgpack?: never;
    };

/** One event for the stream, written with the change it announces. */
export type OutboxEvent = OutboxBody & {
  /**
   * The event's key: its rows reach the stream in the order their transactions committed, and
   * on a super stream its partition. Required: a non-empty string.
   */
  readonly key: string;
  /** Event time (epoch ms or a Date): the message's creation time, a job's default event time. Default: now. */
  readonly eventTime?: number | Date;
  /** Application properties of the message: string values, names not starting with 'sw-' (the library's). */
  readonly headers?: Readonly<Record<string, string>>;
};

/** An event as the outbox table stores it. */
export interface OutboxRow {
  readonly key: string;
  /** Event time, epoch ms. */
  readonly eventMs: number;
  /** The headers as JSON text; null when none. */
  readonly headers: string | null;
  readonly contentType: string;
  readonly body: Uint8Array;
}

/**
 * `event` as a row, checked: a `ConfigError` for what cannot be written, its parameter
 * starting with `where` ('outbox' for one event, 'outbox events[3]' for one of a list).
 */
export function outboxRowOf(event: OutboxEvent, where: string): OutboxRow {
  // A JavaScript caller may pass anything.
  const given: unknown = event;
  if (typeof given !== 'object' || given === null) {
    throw new ConfigError(`${where} event`, 'must be an object', given);
  }
  const { key } = event;
  if (typeof key !== 'string' || key === '') {
    throw new ConfigError(`${where} key`, 'must be a non-empty string', key);
  }
  const eventMs = eventTimeOf(event.eventTime, where);
  const [contentType, body] = bodyOf(event, where);
  return { key, eventMs, headers: headersOf(event.headers, where), contentType, body };
}

/** The times both a Date and PostgreSQL's timestamptz hold: from 4713 BC to +275760, epoch ms. */
const MIN_TIME_MS = Date.UTC(-4712, 0, 1);
const MAX_TIME_MS = 8.64e15;

/** `given` as epoch ms (now when absent), checked: an integer a Date holds. */
function eventTimeOf(given: number | Date | undefined, where: string): number {
  if (given === undefined) return Date.now();
  const ms = given instanceof Date ? given.getTime() : given;
  if (!Number.isSafeInteger(ms) || ms < MIN_TIME_MS || ms > MAX_TIME_MS) {
    throw new ConfigError(
      `${where} eventTime`,
      `must be a Date or integer epoch ms from ${MIN_TIME_MS} (4713 BC) to ${MAX_TIME_MS}`,
      given,
    );
  }
  return ms;
}

/** The content type and bytes of `event`'s body. */
function bodyOf(event: OutboxBody, where: string): [string, Uint8Array] {
  const given = ['json', 'msgpack', 'bytes'].filter((field) => field in event);
  if (given.length !== 1) {
    throw new ConfigError(`${where} body`, 'must be exactly one of json, msgpack or bytes', given);
  }
  if ('json' in event) {
    let text: string | undefined;
    try {
      text = jsonText(event.json);
    } catch (error) {
      throw new ConfigError(`${where} json`, `has no JSON form (${String(error)})`, event.json);
    }
    if (text === undefined) throw new ConfigError(`${where} json`, 'has no JSON form', event.json);
    return ['application/json', Buffer.from(text, 'utf8')];
  }
  if ('msgpack' in event) return ['application/msgpack', encodeMsgpack(event.msgpack)];
  const { bytes, contentType = 'application/octet-stream' } = event;
  if (!(bytes instanceof Uint8Array)) {
    throw new ConfigError(`${where} bytes`, 'must be a Uint8Array', bytes);
  }
  if (typeof contentType !== 'string' || contentType === '') {
    throw new ConfigError(`${where} contentType`, 'must be a non-empty string', contentType);
  }
  return [contentType, bytes];
}

/** `headers` as the JSON text the table stores; null when none. */
function headersOf(
  headers: Readonly<Record<string, string>> | undefined,
  where: string,
): string | null {
  if (headers === undefined) return null;
  // A JavaScript caller may pass anything.
  const given: unknown = headers;
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new ConfigError(`${where} headers`, 'must be an object of string values', headers);
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') {
      throw new ConfigError(`${where} header '${name}'`, 'must be a string', value);
    }
    if (name.startsWith('sw-')) {
      throw new ConfigError(`${where} header`, "must not start with 'sw-' (the library's)", name);
    }
  }
  return JSON.stringify(headers);
}
