import type { SinkTransaction } from '../database/sink-database.js';
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
}

/**
 * Writes `rows` (column name to value, the same columns in every row) as upserts on `target`,
 * a few statements of many rows each, with the result of applying them one by one. One
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

/** Upserts `kept`, rows of distinct keys, a few statements of many rows each. */
async function upsertRound(
  tx: SinkTransaction,
  target: UpsertTarget,
  kept: readonly Readonly<Record<string, unknown>>[],
): Promise<void> {
  const first = kept[0];
  if (first === undefined) return;
  const columns = Object.keys(first);
  for (const name of [...target.conflict, ...(target.guard === undefined ? [] : [target.guard])]) {
    if (!columns.includes(name))
      throw new Error(`the row has no column '${name}' (${columns.join(', ')})`);
  }
  const quoted = columns.map((c) => quoteIdentifier('column', c));
  const updated = columns.filter((c) => !target.conflict.includes(c));
  const tail =
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
            `EXCLUDED.${quoteIdentifier('column', target.guard)}`));
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  for (let from = 0; from < kept.length; from += perStatement) {
    const part = kept.slice(from, from + perStatement);
    const params: unknown[] = [];
    const values = part.map((row) => {
      const names = Object.keys(row);
      if (names.length !== columns.length || names.some((n) => !columns.includes(n))) {
        throw new Error(
          `rows differ in their columns: (${names.join(', ')}) and (${columns.join(', ')})`,
        );
      }
      return `(${columns.map((c) => `$${params.push(row[c])}`).join(', ')})`;
    });
    await tx.query(
      `INSERT INTO ${target.table} (${quoted.join(', ')}) VALUES ${values.join(', ')}${tail}`,
      params,
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
  const byKey = new Map<string, Row[]>();
  for (const row of rows) {
    const key = JSON.stringify(target.conflict.map((c) => keyPart(row[c])));
    const kept = byKey.get(key);
    if (kept === undefined || guard === undefined) {
      byKey.delete(key); // re-inserted last: the statement's rows keep the batch's order
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
