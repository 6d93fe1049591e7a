// The outbox table's rows and key claims as writers left them, in a form to compare byte for
// byte (bodies in hex, headers as PostgreSQL's jsonb text), and a transaction that counts the
// statements sent through it; events the writers refuse.
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

/** Events `writeOutbox` refuses with a `ConfigError`, one for each of its rules. */
export const BAD_OUTBOX_EVENTS: readonly unknown[] = [
  null,
  'k',
  { key: '', json: 1 },
  { json: 1 },
  { key: 7, json: 1 },
  { key: 'k', json: 1, bytes: Uint8Array.of(1) },
  { key: 'k' },
  { key: 'k', json: 1, headers: { 'sw-x': 'v' } },
  { key: 'k', json: 1, headers: { n: 1 } },
  { key: 'k', json: 1, headers: 'h' },
  { key: 'k', json: 1, eventTime: Number.NaN },
  { key: 'k', json: 1, eventTime: 8.64e15 + 1 },
  { key: 'k', json: 1, eventTime: new Date(Number.NaN) },
  { key: 'k', json: { big: 1n } },
  { key: 'k', json: undefined },
  { key: 'k', bytes: [1, 2] },
  { key: 'k', bytes: Uint8Array.of(1), contentType: '' },
];
