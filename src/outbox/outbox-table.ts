import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { createIfMissing } from '../database/create-if-missing.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import type { RelayPosition } from './relay-publishing-id.js';

/** The outbox table's default name. */
export const DEFAULT_OUTBOX_TABLE = 'stream_windows_outbox';

/**
 * Creates the outbox table `table` (default 'stream_windows_outbox'), its key table
 * (`<table>_keys`) and the relay's index when missing: for a service that writes before any
 * relay started (a relay creates them at its start too). `outboxTableDdl` gives the statements.
 */
export async function createOutboxTable(database: SinkDatabase, table?: string): Promise<void> {
  await new OutboxTable(table).create(database);
}

/** The statements that create the outbox table `table` and what goes with it (see `createOutboxTable`). */
export function outboxTableDdl(table?: string): readonly string[] {
  return new OutboxTable(table).ddl();
}

/** One outbox row as the relay reads it (numbers as text: drivers differ past 2^53). */
export interface OutboxRecord {
  readonly id: string;
  readonly txid: string;
  readonly key: string;
  /** Event time, epoch milliseconds. */
  readonly event_ms: string;
  readonly headers: Readonly<Record<string, string>> | null;
  readonly content_type: string;
  readonly body: Uint8Array;
}

/** Where the relay stands: the last row the stream holds, as its place and its row id. */
export interface OutboxCursor extends RelayPosition {
  /** The row's id in the outbox table. */
  readonly rowId: bigint;
}

/** The cursor at `row`, the row after `cursor` in relay order (its index counted on from it). */
export function cursorAfter(
  cursor: OutboxCursor | undefined,
  row: Pick<OutboxRecord, 'id' | 'txid'>,
): OutboxCursor {
  const txid = BigInt(row.txid);
  const index = cursor !== undefined && cursor.txid === txid ? cursor.index + 1 : 0;
  return { txid, index, rowId: BigInt(row.id) };
}

/** What one read of the outbox found. */
export interface OutboxRead {
  /** Rows past the cursor whose transaction and every older one ended: final, in relay order. */
  readonly rows: readonly OutboxRecord[];
  /**
   * Committed rows past the cursor held back because an older transaction is still open
   * (it could still insert a row that comes before them): counted up to the read's limit.
   */
  readonly waiting: number;
  /** The oldest transaction still open when the read was made (its snapshot's xmin); undefined when it found no row. */
  readonly openFrom: bigint | undefined;
}

/** How far behind the relay is, read from the table. */
export interface OutboxBacklog {
  /** Committed rows past the cursor (published or not yet visible to the relay's order). */
  readonly rows: bigint;
  /** Event-time age of the oldest such row, ms; undefined when there is none. */
  readonly oldestAgeMs: number | undefined;
}

/**
 * The outbox table and its key table, as SQL. The outbox holds what services wrote in their
 * own transactions; `txid` is the inserting transaction's id (xid8), the order the relay
 * publishes in. The key table holds, per key, the last transaction that wrote one: a writer
 * of an older transaction is refused there (see `writeOutbox`), so that a key's rows commit
 * in the order of their transaction ids, which makes that order the key's commit order.
 */
export class OutboxTable {
  /** The table's name as given (for messages). */
  readonly name: string;
  private readonly table: string;
  private readonly keys: string;
  private readonly orderIndex: string;
  private readonly orderIndexName: string;

  constructor(name: string = DEFAULT_OUTBOX_TABLE) {
    this.table = quoteIdentifier('table', name, true);
    this.name = name;
    this.keys = quoteIdentifier('table', `${name}_keys`, true);
    const bare = name.includes('.') ? name.slice(name.indexOf('.') + 1) : name;
    this.orderIndexName = `${bare}_relay_order`;
    this.orderIndex = quoteIdentifier('table', this.orderIndexName);
  }

  /** The statements that create both tables and the relay's index (each `IF NOT EXISTS`). */
  ddl(): readonly string[] {
    return [
      `CREATE TABLE IF NOT EXISTS ${this.table} (` +
        'id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ' +
        'txid xid8 NOT NULL, ' +
        'key text NOT NULL, ' +
        'event_time timestamptz NOT NULL, ' +
        'headers jsonb, ' +
        'content_type text NOT NULL, ' +
        'body bytea NOT NULL)',
      `CREATE INDEX IF NOT EXISTS ${this.orderIndex} ON ${this.table} (txid, id)`,
      `CREATE TABLE IF NOT EXISTS ${this.keys} (key text PRIMARY KEY, last_txid xid8 NOT NULL)`,
    ];
  }

  /**
   * Creates what is missing (again when another creator won a race to it). Asks the catalog
   * first and runs no DDL when all is there: `CREATE INDEX IF NOT EXISTS` takes a SHARE lock on
   * the table even when the index exists, so it would wait for every open transaction that
   * wrote the outbox, and every writer would queue behind it (a relay restarting while a
   * service's transaction is open would stall all writers until that one ends).
   */
  async create(database: SinkDatabase): Promise<void> {
    const exists = await database.transaction(async (tx) => {
      const { rows } = await tx.query<{ ok: boolean }>(
        'SELECT to_regclass($2::text) IS NOT NULL AND EXISTS (SELECT 1 FROM pg_index x ' +
          'JOIN pg_class c ON c.oid = x.indexrelid ' +
          'WHERE x.indrelid = to_regclass($1::text) AND c.relname = $3) AS ok',
        [this.table, this.keys, this.orderIndexName],
      );
      return rows[0]?.ok === true;
    });
    if (exists) return;
    await createIfMissing(database, async (tx) => {
      for (const statement of this.ddl()) await tx.query(statement);
    });
  }

  /**
   * Inserts one row in the caller's transaction, after claiming its key for this transaction
   * in the key table (see `claim`). A refused claim inserts no key row, so `txid` is NULL and
   * PostgreSQL refuses the row with SQLSTATE 23502, which aborts the transaction.
   */
  insertSql(): string {
    return (
      `WITH ${this.claim('VALUES ($1, pg_current_xact_id())')} ` +
      `INSERT INTO ${this.table} (txid, key, event_time, headers, content_type, body) ` +
      `SELECT (SELECT pg_current_xact_id() FROM claim), $1, ${eventTime('$2::bigint')}, ` +
      '$3::jsonb, $4, $5 RETURNING id::text AS id'
    );
  }

  /**
   * Inserts rows in the caller's transaction in one statement, as `insertSql` once a row in
   * order would: claims their keys in the order they first appear (the order that makes or
   * avoids a deadlock), then inserts the rows in array order, so that their ids follow it. The
   * rows come as arrays, one element a row: `$1` keys, `$2` event times (epoch ms), `$3`
   * headers (JSON text or null), `$4` content types, `$5` bodies.
   *
   * Answers one row: `ids` (text, in array order) when every claim held; else `refused`, the
   * index of the first row whose key's claim failed, and nothing inserted: the caller then
   * inserts that row with `insertSql`, whose refusal aborts the transaction, as a statement
   * cannot both tell which row was refused and fail.
   */
  insertAllSql(): string {
    return (
      'WITH e AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], ' +
      '$5::bytea[]) WITH ORDINALITY AS e(key, event_ms, headers, content_type, body, n)), ' +
      `${this.claim('SELECT key, pg_current_xact_id() FROM e GROUP BY key ORDER BY min(n)')}, ` +
      'refused AS (SELECT min(e.n) AS n FROM e LEFT JOIN claim c ON c.key = e.key ' +
      'WHERE c.key IS NULL), ' +
      `written AS (INSERT INTO ${this.table} (txid, key, event_time, headers, content_type, body) ` +
      `SELECT pg_current_xact_id(), key, ${eventTime('event_ms')}, headers::jsonb, content_type, ` +
      'body FROM e WHERE (SELECT n FROM refused) IS NULL ORDER BY n RETURNING id) ' +
      'SELECT (SELECT n FROM refused)::int - 1 AS refused, ' +
      '(SELECT array_agg(id::text ORDER BY id) FROM written) AS ids'
    );
  }

  /**
   * The CTE `claim`: inserts the `(key, last_txid)` rows of `keys` into the key table, or
   * updates a key's row, returning the keys claimed. A key's claim fails (it is not returned)
   * when a younger transaction already committed a row of that key: committing this one now
   * would put the key's rows out of transaction-id order. A claim held by a transaction still
   * open waits for it to end.
   */
  private claim(keys: string): string {
    return (
      `claim AS (INSERT INTO ${this.keys} AS k (key, last_txid) ${keys} ` +
      'ON CONFLICT (key) DO UPDATE SET last_txid = EXCLUDED.last_txid ' +
      'WHERE k.last_txid <= EXCLUDED.last_txid RETURNING key)'
    );
  }

  /**
   * Up to `limit` rows past `after` (all rows when undefined) whose transaction id is below
   * the oldest transaction still open: those transactions have all ended, and every later
   * writer gets a larger id, so no row can ever come before these. One statement: the
   * snapshot that finds the rows is the one whose xmin gates them. The rows held back are read
   * to be counted only: without their bodies.
   */
  async read(
    tx: SinkTransaction,
    after: OutboxCursor | undefined,
    limit: number,
  ): Promise<OutboxRead> {
    const { past, params } = pastCursor(after, limit);
    // A held row's body is null: `rows` below keeps the final rows only.
    const { rows } = await tx.query<OutboxRecord & { open_from: string; held: boolean }>(
      'WITH gate AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin) ' +
        'SELECT o.id::text AS id, o.txid::text AS txid, o.key, ' +
        '(extract(epoch FROM o.event_time) * 1000)::bigint::text AS event_ms, o.headers, ' +
        'o.content_type, CASE WHEN o.txid < gate.xmin THEN o.body END AS body, ' +
        'gate.xmin::text AS open_from, o.txid >= gate.xmin AS held ' +
        `FROM ${this.table} o, gate WHERE ${past} ORDER BY o.txid, o.id LIMIT $1`,
      params,
    );
    // In txid order, every held row comes after every final one.
    const held = rows.findIndex((row) => row.held);
    const openFrom = rows[0]?.open_from;
    return {
      rows: held === -1 ? rows : rows.slice(0, held),
      waiting: held === -1 ? 0 : rows.length - held,
      openFrom: openFrom === undefined ? undefined : BigInt(openFrom),
    };
  }

  /**
   * The oldest transaction open now (a new snapshot's xmin), as `read` tells it in `openFrom`.
   * While it is the one a read found holding every row back, no row past them can have become
   * final: every older transaction had ended at that read, and every new one is younger.
   */
  async oldestOpen(tx: SinkTransaction): Promise<bigint> {
    const { rows } = await tx.query<{ xmin: string }>(
      'SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin',
    );
    return BigInt((rows[0] as { xmin: string }).xmin);
  }

  /** The row id of the row at `position`; undefined when the table has no such row. */
  async rowAt(tx: SinkTransaction, position: RelayPosition): Promise<bigint | undefined> {
    const { rows } = await tx.query<{ id: string }>(
      // o.id, not id: a bare name in ORDER BY is the output column, the id as text ('10' < '9').
      `SELECT o.id::text AS id FROM ${this.table} o WHERE o.txid = $1::xid8 ` +
        'ORDER BY o.id OFFSET $2 LIMIT 1',
      [position.txid.toString(), position.index],
    );
    return rows[0] === undefined ? undefined : BigInt(rows[0].id);
  }

  /**
   * The id, transaction and key of up to `limit` committed rows past `after`, in relay order,
   * whether their transaction is final or not: what a relay routes by, without the bodies.
   */
  async keysAfter(
    tx: SinkTransaction,
    after: OutboxCursor | undefined,
    limit: number,
  ): Promise<readonly Pick<OutboxRecord, 'id' | 'txid' | 'key'>[]> {
    const { past, params } = pastCursor(after, limit);
    const { rows } = await tx.query<Pick<OutboxRecord, 'id' | 'txid' | 'key'>>(
      'SELECT o.id::text AS id, o.txid::text AS txid, o.key ' +
        `FROM ${this.table} o WHERE ${past} ORDER BY o.txid, o.id LIMIT $1`,
      params,
    );
    return rows;
  }

  /** Whether the table holds a row of transaction `txid` or an older one. */
  async holdsUpTo(tx: SinkTransaction, txid: bigint): Promise<boolean> {
    const { rows } = await tx.query<{ held: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE txid <= $1::xid8) AS held`,
      [txid.toString()],
    );
    return rows[0]?.held === true;
  }

  /** Committed rows past `after`, and the event-time age of the oldest. */
  async backlog(tx: SinkTransaction, after: OutboxCursor | undefined): Promise<OutboxBacklog> {
    const past = after === undefined ? 'true' : '(txid, id) > ($1::xid8, $2::bigint)';
    const { rows } = await tx.query<{ n: string; age_ms: string | null }>(
      `SELECT count(*)::text AS n, ` +
        '(extract(epoch FROM now() - min(event_time)) * 1000)::bigint::text AS age_ms ' +
        `FROM ${this.table} WHERE ${past}`,
      after === undefined ? [] : [after.txid.toString(), after.rowId.toString()],
    );
    const row = rows[0];
    return {
      rows: BigInt(row?.n ?? 0),
      oldestAgeMs: row?.age_ms == null ? undefined : Math.max(0, Number(row.age_ms)),
    };
  }

  /**
   * Deletes the rows of transactions older than `txid` (the transaction of the last row the
   * stream holds: every row before it is on the stream), and the key claims older than it
   * (every transaction that could still write a key is younger). Returns the rows deleted.
   */
  async prune(tx: SinkTransaction, txid: bigint): Promise<number> {
    const { rowCount } = await tx.query(`DELETE FROM ${this.table} WHERE txid < $1::xid8`, [
      txid.toString(),
    ]);
    await tx.query(`DELETE FROM ${this.keys} WHERE last_txid < $1::xid8`, [txid.toString()]);
    return rowCount;
  }
}

/** The condition on `o` of a read of up to `limit` ($1) rows past `after`, and its parameters. */
function pastCursor(
  after: OutboxCursor | undefined,
  limit: number,
): { readonly past: string; readonly params: readonly unknown[] } {
  return after === undefined
    ? { past: 'true', params: [limit] }
    : {
        past: '(o.txid, o.id) > ($2::xid8, $3::bigint)',
        params: [limit, after.txid.toString(), after.rowId.toString()],
      };
}

/** The timestamptz of `ms`, an SQL expression of epoch milliseconds. */
function eventTime(ms: string): string {
  return `'epoch'::timestamptz + ${ms} * interval '1 millisecond'`;
}
