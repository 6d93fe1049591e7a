import { encode as encodeMsgpack } from '@msgpack/msgpack';
import { ConfigError, OutboxOrderError } from '../common/errors.js';
import { jsonText } from '../common/json-text.js';
import { DEFAULT_OUTBOX_TABLE, OutboxTable } from './outbox-table.js';

/**
 * What `writeOutbox` writes through: the caller's transaction, as a `pg` client (`PoolClient`
 * after `BEGIN`) or a PGlite transaction (`db.transaction(async (tx) => …)`) has it.
 */
export interface OutboxStatements {
  /** Runs one SQL statement with `$1`, `$2`, … `params`, in the caller's transaction. */
  query(sql: string, params?: unknown[]): Promise<{ readonly rows: readonly unknown[] }>;
}

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

/** The options of `writeOutbox`: the outbox table. */
export interface WriteOutboxOptions {
  /** The outbox table, as the relay's `table` option names it (default 'stream_windows_outbox'). */
  readonly table?: string;
}

/**
 * Adds `event` to the outbox inside the caller's transaction `tx`: it commits or rolls back
 * with the change it announces, and once committed an outbox relay publishes it exactly once.
 * Resolves with the row's id. The table must exist (`createOutboxTable`, or a relay's first
 * start creates it).
 *
 * Rejects with a `ConfigError` for an event it cannot write (nothing sent to the database), and
 * with an `OutboxOrderError` (retriable: roll back, run the transaction again) when a younger
 * transaction committed a row of the same key meanwhile; other errors are the database's.
 */
export async function writeOutbox(
  tx: OutboxStatements,
  event: OutboxEvent,
  options: WriteOutboxOptions = {},
): Promise<bigint> {
  const name = options.table ?? DEFAULT_OUTBOX_TABLE;
  // A few string operations, next to the round trip: no cache to keep.
  const table = new OutboxTable(name);
  const { key } = event;
  if (typeof key !== 'string' || key === '') {
    throw new ConfigError('outbox key', 'must be a non-empty string', key);
  }
  const eventTime = eventTimeOf(event.eventTime);
  const [contentType, body] = bodyOf(event);
  const headers = headersOf(event.headers);
  try {
    const { rows } = await tx.query(table.insertSql(), [
      key,
      eventTime,
      headers,
      contentType,
      body,
    ]);
    return BigInt((rows[0] as { id: string }).id);
  } catch (error) {
    const { code, column } = (error ?? {}) as { code?: unknown; column?: unknown };
    // The key's claim failed: txid NULL is the insert's way of refusing (see OutboxTable).
    if (code === '23502' && (column === 'txid' || column === undefined)) {
      throw new OutboxOrderError(name, key, error);
    }
    throw error;
  }
}

/** The times both a Date and PostgreSQL's timestamptz hold: from 4713 BC to +275760, epoch ms. */
const MIN_TIME_MS = Date.UTC(-4712, 0, 1);
const MAX_TIME_MS = 8.64e15;

/** `given` as epoch ms (now when absent), checked: an integer a Date holds. */
function eventTimeOf(given: number | Date | undefined): number {
  if (given === undefined) return Date.now();
  const ms = given instanceof Date ? given.getTime() : given;
  if (!Number.isSafeInteger(ms) || ms < MIN_TIME_MS || ms > MAX_TIME_MS) {
    throw new ConfigError(
      'outbox eventTime',
      `must be a Date or integer epoch ms from ${MIN_TIME_MS} (4713 BC) to ${MAX_TIME_MS}`,
      given,
    );
  }
  return ms;
}

/** The content type and bytes of `event`'s body. */
function bodyOf(event: OutboxBody): [string, Uint8Array] {
  const given = ['json', 'msgpack', 'bytes'].filter((field) => field in event);
  if (given.length !== 1) {
    throw new ConfigError('outbox body', 'must be exactly one of json, msgpack or bytes', given);
  }
  if ('json' in event) {
    let text: string | undefined;
    try {
      text = jsonText(event.json);
    } catch (error) {
      throw new ConfigError('outbox json', `has no JSON form (${String(error)})`, event.json);
    }
    if (text === undefined) throw new ConfigError('outbox json', 'has no JSON form', event.json);
    return ['application/json', Buffer.from(text, 'utf8')];
  }
  if ('msgpack' in event) return ['application/msgpack', encodeMsgpack(event.msgpack)];
  const { bytes, contentType = 'application/octet-stream' } = event;
  if (!(bytes instanceof Uint8Array)) {
    throw new ConfigError('outbox bytes', 'must be a Uint8Array', bytes);
  }
  if (typeof contentType !== 'string' || contentType === '') {
    throw new ConfigError('outbox contentType', 'must be a non-empty string', contentType);
  }
  return [contentType, bytes];
}

/** `headers` as the jsonb the table stores; null when none. */
function headersOf(headers: Readonly<Record<string, string>> | undefined): string | null {
  if (headers === undefined) return null;
  // A JavaScript caller may pass anything.
  const given: unknown = headers;
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new ConfigError('outbox headers', 'must be an object of string values', headers);
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== 'string') {
      throw new ConfigError(`outbox header '${name}'`, 'must be a string', value);
    }
    if (name.startsWith('sw-')) {
      throw new ConfigError('outbox header', "must not start with 'sw-' (the library's)", name);
    }
  }
  return JSON.stringify(headers);
}
