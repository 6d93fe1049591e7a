// The outbox table's rows and key claims as writers left them, in a form to compare byte for
// byte (bodies in hex, headers as PostgreSQL's jsonb text), a claim as a younger transaction
// leaves it, and a transaction that counts the statements sent through it.
import type { OutboxStatements } from '../../../src/outbox/outbox-write.js';

export interface StoredOutboxRow {
  readonly id: string;
  readonly txid: string;
  readonly key: string;
  readonly event_ms: string;
  readonly headers: string | null;
  readonly content_type: string;
  /** Hex. */
  readonly body: string;
}

/** Every row of `table`, by id. */
export async function storedRows(db: OutboxStatements, table: string): Promise<StoredOutboxRow[]> {
  const { rows } = await db.query(
    'SELECT o.id::text AS id, o.txid::text AS txid, o.key, ' +
      '(extract(epoch FROM o.event_time) * 1000)::bigint::text AS event_ms, ' +
      "o.headers::text AS headers, o.content_type, encode(o.body, 'hex') AS body " +
      // o.id: a bare id would be the output column, the id as text ('10' < '9').
      `FROM ${table} o ORDER BY o.id`,
  );
  return rows as StoredOutboxRow[];
}

/** Every key claim of `table`, by key: the key and its transaction. */
export async function storedClaims(
  db: OutboxStatements,
  table: string,
): Promise<{ key: string; last_txid: string }[]> {
  const { rows } = await db.query(
    `SELECT key, last_txid::text AS last_txid FROM ${table}_keys ORDER BY key COLLATE "C"`,
  );
  return rows as { key: string; last_txid: string }[];
}

/** A transaction id younger than any a test runs (2^40). */
export const YOUNGER_TXID = '1099511627776';

/** `key` claimed in `table` as a younger transaction that committed meanwhile leaves it. */
export async function claimedByYounger(
  db: OutboxStatements,
  table: string,
  key: string,
): Promise<void> {
  await db.query(
    `INSERT INTO ${table}_keys VALUES ($1, $2) ` +
      'ON CONFLICT (key) DO UPDATE SET last_txid = EXCLUDED.last_txid',
    [key, YOUNGER_TXID],
  );
}

/** The current transaction's id, as text. */
export async function currentTxid(tx: OutboxStatements): Promise<string> {
  const { rows } = await tx.query('SELECT pg_current_xact_id()::text AS txid');
  return (rows[0] as { txid: string }).txid;
}

/** `tx`, counting the statements sent through it in `statements`. */
export function counting(tx: OutboxStatements): OutboxStatements & { statements: number } {
  const counted = {
    statements: 0,
    query: (sql: string, params?: unknown[]) => {
      counted.statements++;
      return tx.query(sql, params);
    },
  };
  return counted;
}
