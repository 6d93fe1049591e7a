import { ConfigError, OutboxOrderError } from '../common/errors.js';
import { outboxRowOf, type OutboxEvent, type OutboxRow } from './outbox-event.js';
import { DEFAULT_OUTBOX_TABLE, OutboxTable } from './outbox-table.js';

/**
 * What `writeOutbox` writes through: the caller's transaction, as a `pg` client (`PoolClient`
 * after `BEGIN`) or a PGlite transaction (`db.transaction(async (tx) => …)`) has it.
 */
export interface OutboxStatements {
  /** Runs one SQL statement with `$1`, `$2`, … `params`, in the caller's transaction. */
  query(sql: string, params?: unknown[]): Promise<{ readonly rows: readonly unknown[] }>;
}

/** The options of `writeOutbox` and `writeOutboxAll`: the outbox table. */
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
  const row = outboxRowOf(event, 'outbox');
  return insertOne(tx, new OutboxTable(options.table ?? DEFAULT_OUTBOX_TABLE), row, undefined);
}

/**
 * Adds `events` to the outbox inside the caller's transaction `tx` in one statement (one per
 * 16 MB or so of events, for a larger list; `writeOutbox`'s for a list of one), as
 * `writeOutbox` called for each in order would: the same rows, their ids in the list's order,
 * each key claimed as there. Resolves with the ids, in the list's order.
 *
 * Rejects with a `ConfigError` naming the index of an event it cannot write (`outbox
 * events[3] key …`; nothing sent to the database), and with an `OutboxOrderError` naming the
 * index and key of the first event whose key a younger transaction committed meanwhile
 * (retriable: PostgreSQL has aborted the transaction; roll back, run it again); other errors
 * are the database's.
 */
export async function writeOutboxAll(
  tx: OutboxStatements,
  events: readonly OutboxEvent[],
  options: WriteOutboxOptions = {},
): Promise<bigint[]> {
  // A JavaScript caller may pass anything.
  const given: unknown = events;
  if (!Array.isArray(given)) {
    throw new ConfigError('outbox events', 'must be an array of events', given);
  }
  const rows = events.map((event, index) => outboxRowOf(event, `outbox events[${index}]`));
  const table = new OutboxTable(options.table ?? DEFAULT_OUTBOX_TABLE);
  const ids: bigint[] = [];
  for (const part of partsOf(rows)) ids.push(...(await insertAll(tx, table, part, ids.length)));
  return ids;
}

/** The parameters of `row` in the order both insert statements take them (see OutboxTable). */
function paramsOf(row: OutboxRow): unknown[] {
  return [row.key, row.eventMs, row.headers, row.contentType, row.body];
}

/**
 * Inserts `row` (the list's `index`-th, for `writeOutboxAll`): its id, or an
 * `OutboxOrderError` when its key's claim failed.
 */
async function insertOne(
  tx: OutboxStatements,
  table: OutboxTable,
  row: OutboxRow,
  index: number | undefined,
): Promise<bigint> {
  try {
    const { rows } = await tx.query(table.insertSql(), paramsOf(row));
    return BigInt((rows[0] as { id: string }).id);
  } catch (error) {
    const { code, column } = (error ?? {}) as { code?: unknown; column?: unknown };
    // The key's claim failed: txid NULL is the insert's way of refusing (see OutboxTable).
    if (code === '23502' && (column === 'txid' || column === undefined)) {
      throw new OutboxOrderError(table.name, row.key, error, index);
    }
    throw error;
  }
}

/**
 * The parameters' size past which a list is cut into several statements: far below what a
 * statement can carry (1 GB), and what a string of pg's can hold (512 MB; it sends bodies in
 * hex, twice their size), and far above where one more round trip costs anything.
 */
const STATEMENT_BYTES = 16 * 1024 * 1024;

/** `rows` cut into runs of up to `STATEMENT_BYTES` each (a larger row alone), in order. */
function* partsOf(rows: readonly OutboxRow[]): Generator<OutboxRow[]> {
  let part: OutboxRow[] = [];
  let bytes = 0;
  for (const row of rows) {
    // About the bytes of its parameters: bodies in hex, text counted twice for its quoting.
    const size =
      2 * (row.key.length + (row.headers?.length ?? 0) + row.contentType.length) +
      2 * row.body.length;
    if (part.length > 0 && bytes + size > STATEMENT_BYTES) {
      yield part;
      part = [];
      bytes = 0;
    }
    part.push(row);
    bytes += size;
  }
  if (part.length > 0) yield part;
}

/**
 * Inserts `rows`, the list's from index `first` on, in one statement: their ids, or an
 * `OutboxOrderError` naming the first whose key's claim failed.
 */
async function insertAll(
  tx: OutboxStatements,
  table: OutboxTable,
  rows: readonly OutboxRow[],
  first: number,
): Promise<bigint[]> {
  // One row: writeOutbox's statement, which PostgreSQL runs faster than the list's (0.63 to
  // 1.04 of writeOutbox's speed at one event per transaction, by the outbox-write bench).
  if (rows.length === 1) return [await insertOne(tx, table, rows[0] as OutboxRow, first)];
  const columns: unknown[][] = [[], [], [], [], []];
  for (const row of rows) paramsOf(row).forEach((value, column) => columns[column]?.push(value));
  const { rows: answer } = await tx.query(table.insertAllSql(), columns);
  const { refused, ids } = answer[0] as { refused: number | null; ids: string[] };
  if (refused === null) return ids.map((id) => BigInt(id));
  const row = rows[refused] as OutboxRow;
  // The refused row inserted as writeOutbox would: its claim fails again, as the younger
  // transaction's claim stays (prune keeps it: the relay is held back by this one, older and
  // open), so PostgreSQL refuses the row and aborts the transaction.
  await insertOne(tx, table, row, first + refused);
  throw new Error(`outbox '${table.name}': key '${row.key}' refused, then claimed`);
}
