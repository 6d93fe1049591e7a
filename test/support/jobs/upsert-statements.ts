// What the upsert statements' tests share on PGlite and PostgreSQL: the unnest statement
// (one array parameter per column) against multi-row VALUES, on the same rows, each into a
// table of its own, through the SinkDatabase port of either database.
import type { SinkDatabase, SinkTransaction } from '../../../src/database/sink-database.js';
import { ensureTable, type TableColumns } from '../../../src/sink/expected-table.js';
import { upsertRows } from '../../../src/sink/upsert.js';

type Row = Readonly<Record<string, unknown>>;

/**
 * Columns of most kinds a sink writes: numbers of three widths, text of three kinds, time,
 * JSON; char(3) and bit(3), whose type names alone would mean a length of 1.
 */
export const COLUMNS =
  'k text PRIMARY KEY, n numeric(12,2), b bigint, i integer, s varchar(12), c char(3), ' +
  'ts timestamptz, d date, j jsonb, flag boolean, bits bit(3)';

/** Values that an array literal must quote, escape or keep apart from NULL. */
const TEXTS = [
  'plain',
  '',
  'NULL',
  'null',
  'a "quoted" word',
  "it's",
  'back\\slash\\',
  '{braces},commas',
  ' spaces ',
  'tab\tnew\nline',
  'é漢字🙂',
];

/** Rows with those values, NULLs in every column but the key, and a key twice (the last kept). */
export function trickyRows(): Row[] {
  const rows: Row[] = TEXTS.map((text, i) => ({
    k: text === '' ? 'empty' : text,
    n: [12.345, '-0.005', 1e9, null][i % 4],
    b: [2n ** 62n, '9007199254740993', -1, null][i % 4],
    i: [0, -2147483648, '42', null][i % 4],
    s: text.slice(0, 12),
    c: ['ab', 'abc', null, 'x'][i % 4],
    ts: [new Date(Date.UTC(2026, 0, 1, 12, 30, 15, 123)), '2026-03-01T00:00:00Z', null][i % 3],
    d: ['2026-02-28', null][i % 2],
    j: [JSON.stringify({ text, n: [1, null] }), JSON.stringify(text), null, { nested: text }][
      i % 4
    ],
    flag: [true, false, null][i % 3],
    bits: ['101', null][i % 2],
  }));
  rows.push({ ...(rows[0] as Row), n: 1, s: 'kept' });
  rows.push(
    Object.fromEntries(Object.keys(rows[0] as Row).map((c) => [c, c === 'k' ? 'all null' : null])),
  );
  return rows;
}

/** Each statement a transaction sent, to tell how the rows went. */
export function recording(tx: SinkTransaction, sent: string[]): SinkTransaction {
  return {
    query: (sql, params) => {
      sent.push(sql);
      return tx.query(sql, params);
    },
  };
}

/** The shape of a statement the upsert sent: one unnest, or VALUES of its rows. */
export function shapeOf(sql: string): 'unnest' | 'values' {
  if (/ SELECT \* FROM unnest\(/.test(sql)) return 'unnest';
  if (/ VALUES \(/.test(sql)) return 'values';
  throw new Error(`not an upsert: ${sql}`);
}

/** A table's rows as JSON text, ordered by key: how two tables are compared. */
export async function tableJson(database: SinkDatabase, table: string): Promise<string[]> {
  return database.transaction(async (tx) => {
    const { rows } = await tx.query<{ row: string }>(
      `SELECT row_to_json(t)::text AS row FROM ${table} AS t ORDER BY k`,
    );
    return rows.map((row) => row.row);
  });
}

/** Creates `table` with `columns` and reads its columns as the sink does at its start. */
export async function createTable(
  database: SinkDatabase,
  table: string,
  columns = COLUMNS,
): Promise<TableColumns> {
  return database.transaction(async (tx) => {
    await tx.query(`CREATE TABLE ${table} (${columns})`);
    return ensureTable(tx, { name: table, quoted: table, columns: [], notCreatable: 'test' });
  });
}

/**
 * Upserts `batches` (a transaction each) into `table`, as unnest when given the table's
 * `arrayTypes`, as VALUES without; resolves with the statements sent, or rejects with the
 * database's error.
 */
export async function upsertInto(
  database: SinkDatabase,
  table: string,
  batches: readonly (readonly Row[])[],
  arrayTypes?: ReadonlyMap<string, string>,
): Promise<string[]> {
  const sent: string[] = [];
  for (const rows of batches) {
    await database.transaction((tx) =>
      upsertRows(recording(tx, sent), { table, conflict: ['k'], arrayTypes }, rows),
    );
  }
  return sent;
}

/** The SQLSTATE of what `work` rejected with; undefined when it resolved. */
export async function sqlStateOf(work: Promise<unknown>): Promise<string | undefined> {
  try {
    await work;
    return undefined;
  } catch (error) {
    return String((error as { code?: unknown }).code);
  }
}
