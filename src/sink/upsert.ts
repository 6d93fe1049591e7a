import type { SinkTransaction } from '../database/sink-database.js';
import { jsonText } from '../common/json-text.js';
import { quoteIdentifier } from '../database/sql-identifier.js';

/** PostgreSQL's bound on one statement's parameters is 65,535; stay well below it. */
const MAX_PARAMETERS = 30_000;

export interface UpsertTarget {
  /** The table, quoted. */
  readonly table: string;
  /** Column names (unquoted) of the unique key the rows conflict on. */
  readonly conflict: readonly string[];
  /**
   * A column whose stored value must be lower than the new row's for the row to be replaced
   * (`... DO UPDATE ... WHERE stored.version < excluded.version`): older updates arriving
   * later are passed over. Without it, the later row replaces the stored one.
   */
  readonly guard?: string | undefined;
  /**
   * Each column's array type as the database names it (`bigint[]`; `ensureTable` reads them
   * from the table). Given for every column of the rows, a round of rows goes as ONE statement
   * whatever its size, `INSERT ... SELECT * FROM unnest($1::bigint[], ...)`: one array parameter
   * per column, planned once, no split under PostgreSQL's 65,535 parameters. A column of an
   * array type has none (unnest would flatten its arrays), nor does a round with a value that
   * is an array or bytes: those go as multi-row VALUES.
   */
  readonly arrayTypes?: ReadonlyMap<string, string> | undefined;
}

/**
 * Writes `rows` (column name to value, the same columns in every row) as upserts on `target`,
 * one statement of all rows (`arrayTypes`) or a few of many rows each, with the result of applying them one by one. One
 * statement may not touch a row twice, so rows of one key are reduced first: to the last, or
 * with a guard to the first of the highest version where JavaScript compares versions as the
 * database does (numbers, bigints, Dates); other versions (text, null, mixed types) are left to
 * the database's comparison, each in a later statement (a round) in the batch's order, so
 * where a batch splits never changes the row kept.
 */
export async function upsertRows(
  tx: SinkTransaction,
  target: UpsertTarget,
  rows: readonly Readonly<Record<string, unknown>>[],
): Promise<void> {
  for (const round of rounds(target, rows)) await upsertRound(tx, target, round);
}

/** Upserts `kept`, rows of distinct keys: one unnest statement, or VALUES of many rows each. */
async function upsertRound(
  tx: SinkTransaction,
  target: UpsertTarget,
  kept: readonly Row[],
): Promise<void> {
  const first = kept[0];
  if (first === undefined) return;
  const columns = Object.keys(first);
  for (const name of [...target.conflict, ...(target.guard === undefined ? [] : [target.guard])]) {
    if (!columns.includes(name))
      throw new Error(`the row has no column '${name}' (${columns.join(', ')})`);
  }
  const quoted = columns.map((c) => quoteIdentifier('column', c)).join(', ');
  const tail = conflictClause(target, columns);
  const arrays = columnArrays(columns, kept, target.arrayTypes);
  if (arrays !== undefined) {
    await tx.query(
      `INSERT INTO ${target.table} (${quoted}) SELECT * FROM unnest(` +
        arrays.types.map((type, i) => `$${i + 1}::${type}`).join(', ') +
        `)${tail}`,
      arrays.values,
    );
    return;
  }
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  for (let from = 0; from < kept.length; from += perStatement) {
    const part = kept.slice(from, from + perStatement);
    const params: unknown[] = [];
    const values = part.map((row) => {
      checkColumns(row, columns);
      return `(${columns.map((c) => `$${params.push(row[c])}`).join(', ')})`;
    });
    await tx.query(
      `INSERT INTO ${target.table} (${quoted}) VALUES ${values.join(', ')}${tail}`,
      params,
    );
  }
}

/** `ON CONFLICT (...) DO UPDATE SET` every other column (`DO NOTHING` when none), guarded. */
function conflictClause(target: UpsertTarget, columns: readonly string[]): string {
  const updated = columns.filter((c) => !target.conflict.includes(c));
  return (
    ` ON CONFLICT (${target.conflict.map((c) => quoteIdentifier('column', c)).join(', ')}) ` +
    (updated.length === 0
      ? 'DO NOTHING'
      : 'DO UPDATE SET ' +
        updated
          .map((c) => `${quoteIdentifier('column', c)} = EXCLUDED.${quoteIdentifier('column', c)}`)
          .join(', ') +
        (target.guard === undefined
          ? ''
          : ` WHERE ${target.table}.${quoteIdentifier('column', target.guard)} < ` +
            `EXCLUDED.${quoteIdentifier('column', target.guard)}`))
  );
}

/**
 * The rows' values column by column with each column's array type, or undefined when a
 * column has no array type or a value would not go through an array as it goes alone: an
 * array (it would nest) or bytes (pg sends bytes alone in binary, in an array as hex text).
 * Both clients write every other value into an array as the text they send for it alone, so
 * the database reads the same values either way.
 */
function columnArrays(
  columns: readonly string[],
  rows: readonly Row[],
  arrayTypes: ReadonlyMap<string, string> | undefined,
): { types: string[]; values: unknown[][] } | undefined {
  if (arrayTypes === undefined) return undefined;
  const types: string[] = [];
  for (const column of columns) {
    const type = arrayTypes.get(column);
    if (type === undefined) return undefined;
    types.push(type);
  }
  const values = columns.map((): unknown[] => []);
  for (const row of rows) {
    checkColumns(row, columns);
    for (const [c, column] of columns.entries()) {
      const value = row[column];
      if (typeof value === 'object' && (Array.isArray(value) || ArrayBuffer.isView(value))) {
        return undefined;
      }
      (values[c] as unknown[]).push(value);
    }
  }
  return { types, values };
}

/** Fails unless `row` has exactly `columns`. */
function checkColumns(row: Row, columns: readonly string[]): void {
  const names = Object.keys(row);
  if (names.length !== columns.length || names.some((n) => !columns.includes(n))) {
    throw new Error(
      `rows differ in their columns: (${names.join(', ')}) and (${columns.join(', ')})`,
    );
  }
}

type Row = Readonly<Record<string, unknown>>;

/**
 * `rows` as rounds of distinct keys, applied in order: without a guard the last row of each
 * key; with one, each key's rows reduced where their versions compare alike in JavaScript and
 * the database, the n-th row left of a key in round n.
 */
function rounds(target: UpsertTarget, rows: readonly Row[]): Row[][] {
  const { guard } = target;
  if (guard === undefined) {
    const last = new Map<string, Row>();
    for (const row of rows) {
      const key = keyOf(target.conflict, row);
      last.delete(key); // re-inserted last: the statement's rows keep the batch's order
      last.set(key, row);
    }
    return [[...last.values()]];
  }
  const byKey = new Map<string, Row[]>();
  for (const row of rows) {
    const key = keyOf(target.conflict, row);
    const kept = byKey.get(key);
    if (kept === undefined) {
      byKey.set(key, [row]);
      continue;
    }
    const last = kept.at(-1) as Row;
    const order = compareInJs(row[guard], last[guard]);
    if (order === undefined) kept.push(row);
    else if (order > 0) kept[kept.length - 1] = row;
  }
  const result: Row[][] = [];
  for (const kept of byKey.values()) {
    kept.forEach((row, round) => (result[round] ??= []).push(row));
  }
  return result;
}

/**
 * The row's key as one text, equal for two rows where their key columns are equal as JSON
 * holds them (`keyPart`): a string by its length and characters, a finite number by its
 * digits, anything else by its JSON text (null, and undefined as null), each tagged.
 */
function keyOf(columns: readonly string[], row: Row): string {
  let key = '';
  for (const column of columns) {
    const part = keyPart(row[column]);
    if (typeof part === 'string') key += `s${part.length}:${part}`;
    else if (typeof part === 'number' && Number.isFinite(part)) key += `n${part};`;
    else {
      const json = jsonText(part) ?? 'null';
      key += `j${json.length}:${json}`;
    }
  }
  return key;
}

/** A key column's value as JSON can hold it (a Date by its time, a bigint by its digits). */
function keyPart(value: unknown): unknown {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/**
 * The sign of `value` - `than` where JavaScript orders them as the database orders a numeric
 * or time column (both numbers or bigints, or both Dates); undefined for anything else.
 */
function compareInJs(value: unknown, than: unknown): number | undefined {
  const numeric = (v: unknown): v is number | bigint =>
    (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'bigint';
  let a: number | bigint;
  let b: number | bigint;
  if (numeric(value) && numeric(than)) [a, b] = [value, than];
  else if (value instanceof Date && than instanceof Date)
    [a, b] = [value.getTime(), than.getTime()];
  else return undefined;
  return a > b ? 1 : a < b ? -1 : 0;
}
