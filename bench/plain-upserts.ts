/**
 * The plain loops of the sink case: what an engineer who knows PostgreSQL writes by hand to
 * upsert a transaction's rows, without a checkpoint. Three ways, each the transaction's
 * statements for one batch of rows:
 * - `values`: one multi-row `INSERT ... VALUES ($1, ...), ... ON CONFLICT DO UPDATE`, five
 *   parameters a row;
 * - `unnest`: one `INSERT ... SELECT * FROM unnest($1::bigint[], ...) ON CONFLICT DO UPDATE`,
 *   an array parameter per column whatever the rows;
 * - `copy`: `COPY` of the rows (text format) into a temporary table (created once per
 *   connection, `ON COMMIT DELETE ROWS`), then one `INSERT ... SELECT ... ON CONFLICT`.
 */

/** One window output as a row of the table every side writes. */
export interface Row {
  readonly value: number;
  readonly key: string;
  readonly window_start: Date;
  readonly window_end: Date;
  readonly count: number;
}

/** A statement of a plain loop's transaction: SQL with parameters, or rows copied into a table. */
export type PlainStatement =
  | { readonly sql: string; readonly params: readonly unknown[] }
  | { readonly copyInto: string; readonly columns: readonly string[]; readonly text: string };

export const PLAINS = ['values', 'unnest', 'copy'] as const;
export type Plain = (typeof PLAINS)[number];

/** A plain loop into `table`: SQL run once per connection first, and each batch's statements. */
export interface PlainLoop {
  readonly before: readonly string[];
  readonly transaction: (rows: readonly Row[]) => PlainStatement[];
}

const COLUMNS = ['value', 'key', 'window_start', 'window_end', 'count'] as const;
const COLUMN_LIST = COLUMNS.join(', ');
const ON_CONFLICT =
  'ON CONFLICT (key, window_start) DO UPDATE SET value = EXCLUDED.value, ' +
  'window_end = EXCLUDED.window_end, count = EXCLUDED.count';

export function plainLoop(plain: Plain, table: string): PlainLoop {
  switch (plain) {
    case 'values':
      return { before: [], transaction: (rows) => [valuesUpsert(table, rows)] };
    case 'unnest':
      return { before: [], transaction: (rows) => [unnestUpsert(table, rows)] };
    case 'copy': {
      const staging = `${table}_staging`;
      return {
        before: [
          `CREATE TEMPORARY TABLE IF NOT EXISTS ${staging} (LIKE ${table}) ON COMMIT DELETE ROWS`,
        ],
        transaction: (rows) => [
          { copyInto: staging, columns: COLUMNS, text: copyText(rows) },
          {
            sql: `INSERT INTO ${table} (${COLUMN_LIST}) SELECT ${COLUMN_LIST} FROM ${staging} ${ON_CONFLICT}`,
            params: [],
          },
        ],
      };
    }
  }
}

function valuesUpsert(table: string, rows: readonly Row[]): PlainStatement {
  const params: unknown[] = [];
  const values = rows.map(
    (row) =>
      `($${params.push(row.value)}, $${params.push(row.key)}, $${params.push(row.window_start)}, ` +
      `$${params.push(row.window_end)}, $${params.push(row.count)})`,
  );
  return {
    sql: `INSERT INTO ${table} (${COLUMN_LIST}) VALUES ${values.join(', ')} ${ON_CONFLICT}`,
    params,
  };
}

function unnestUpsert(table: string, rows: readonly Row[]): PlainStatement {
  return {
    sql:
      `INSERT INTO ${table} (${COLUMN_LIST}) SELECT * FROM unnest($1::bigint[], $2::text[], ` +
      `$3::timestamptz[], $4::timestamptz[], $5::integer[]) ${ON_CONFLICT}`,
    params: [
      rows.map((row) => row.value),
      rows.map((row) => row.key),
      rows.map((row) => row.window_start),
      rows.map((row) => row.window_end),
      rows.map((row) => row.count),
    ],
  };
}

/** The rows in COPY's text format: tab-separated, one line each, backslash escapes in text. */
function copyText(rows: readonly Row[]): string {
  let text = '';
  for (const row of rows) {
    text +=
      `${row.value}\t${copyEscape(row.key)}\t${row.window_start.toISOString()}\t` +
      `${row.window_end.toISOString()}\t${row.count}\n`;
  }
  return text;
}

function copyEscape(text: string): string {
  return text.replace(/[\\\t\n\r]/g, (c) =>
    c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r',
  );
}
