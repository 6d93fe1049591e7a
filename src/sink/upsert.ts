import type { SinkTransaction } from './sink-database.js';
import { quoteIdentifier } from './sql-identifier.js';

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
 * a few statements of many rows each. Rows of one key within `rows` are reduced first to the
 * one the database would keep applying them one by one (one statement may not touch a row
 * twice): the last, or with a guard the first of the highest version.
 */
export async function upsertRows(
  tx: SinkTransaction,
  target: UpsertTarget,
  rows: readonly Readonly<Record<string, unknown>>[],
): Promise<void> {
  const kept = keepLastPerKey(target, rows);
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

function keepLastPerKey(
  target: UpsertTarget,
  rows: readonly Readonly<Record<string, unknown>>[],
): Readonly<Record<string, unknown>>[] {
  const byKey = new Map<string, Readonly<Record<string, unknown>>>();
  for (const row of rows) {
    const key = JSON.stringify(target.conflict.map((c) => keyPart(row[c])));
    const kept = byKey.get(key);
    if (kept === undefined || target.guard === undefined) {
      byKey.delete(key); // re-inserted last: the statement's rows keep the batch's order
      byKey.set(key, row);
    } else if (isHigher(row[target.guard], kept[target.guard])) {
      byKey.delete(key);
      byKey.set(key, row);
    }
  }
  return [...byKey.values()];
}

/** A key column's value as JSON can hold it (a Date by its time, a bigint by its digits). */
function keyPart(value: unknown): unknown {
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'bigint') return value.toString();
  return value;
}

function isHigher(value: unknown, than: unknown): boolean {
  const a = value instanceof Date ? value.getTime() : value;
  const b = than instanceof Date ? than.getTime() : than;
  return (a as number | bigint | string) > (b as number | bigint | string);
}
