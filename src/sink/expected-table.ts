import { SinkTableError } from '../common/errors.js';
import type { SinkTransaction } from '../database/sink-database.js';
import { quoteIdentifier } from '../database/sql-identifier.js';

/** A column a sink writes into a table of the user's naming. */
export interface ExpectedColumn {
  readonly name: string;
  /** The SQL type it is created with. */
  readonly type: string;
  /** Types an existing table may have instead (a bigint count, say); 'any' takes every type. */
  readonly alike?: readonly string[] | 'any';
  /** Created NOT NULL (the sink never writes a null there). */
  readonly notNull?: boolean;
}

/** A table a sink writes (a shape's, or a result's side table), as the sink needs it. */
export interface ExpectedTable {
  /** The table as the option names it (for errors). */
  readonly name: string;
  /** The table quoted (`quoteIdentifier`). */
  readonly quoted: string;
  /** The columns the sink writes (those known before the first row). */
  readonly columns: readonly ExpectedColumn[];
  /** The columns of the unique key its upserts conflict on: created as the primary key. */
  readonly unique?: readonly string[];
  /** Why the sink cannot create it when missing (its columns are not all known); undefined: it can. */
  readonly notCreatable?: string;
}

/** A table's columns as the database names their types (`format_type`). */
export interface TableColumns {
  /** Each column's type. */
  readonly types: ReadonlyMap<string, string>;
  /**
   * The array type of each column whose values an array parameter can carry, one value an
   * element (`UpsertTarget.arrayTypes`): not a column of an array type, nor of a type without
   * an array type or whose arrays take another delimiter than ',' (`box`).
   */
  readonly arrayTypes: ReadonlyMap<string, string>;
}

/**
 * Creates `expected` when missing (`CREATE TABLE IF NOT EXISTS`, so an existing table is left
 * as it is), then checks the table there: each expected column present with its type or an
 * alike one, and a unique key on exactly `unique` (what `ON CONFLICT` needs). Run at the sink's
 * start, so a table that does not match stops it there (`SinkTableError`) rather than at its
 * first batch. Types are compared as the database names them (`format_type`), so `int8` and
 * `bigint` are one. Resolves with the table's columns and their types.
 */
export async function ensureTable(
  tx: SinkTransaction,
  expected: ExpectedTable,
): Promise<TableColumns> {
  const { name, quoted, columns, unique = [], notCreatable } = expected;
  if (notCreatable === undefined) await tx.query(createStatement(expected));
  const { rows } = await tx.query<{
    found: boolean;
    column: string | null;
    type: string | null;
    array_type: string | null;
  }>(
    'SELECT c.oid IS NOT NULL AS found, a.attname::text AS column, ' +
      'format_type(a.atttypid, NULL) AS type, ' +
      // Its typmod given as -1: `bpchar[]`, not `character[]`, which is char(1)[].
      "CASE WHEN t.typcategory <> 'A' AND t.typdelim = ',' " +
      'THEN format_type(NULLIF(t.typarray, 0), -1) END AS array_type ' +
      'FROM (SELECT to_regclass($1) AS oid) AS c LEFT JOIN pg_attribute AS a ' +
      'ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ' +
      'LEFT JOIN pg_type AS t ON t.oid = a.atttypid',
    [quoted],
  );
  if (rows[0]?.found !== true) {
    throw new SinkTableError(name, undefined, `the table (${notCreatable ?? ''})`, 'none');
  }
  const found = new Map(rows.map((row) => [row.column ?? '', row.type ?? '']));
  const types = await typeNames(tx, name, columns);
  for (const column of columns) {
    const type = found.get(column.name);
    const accepted = types.get(column.name) ?? [];
    if (type === undefined) {
      throw new SinkTableError(name, column.name, `a column of type ${accepted[0]}`, 'none');
    }
    if (column.alike !== 'any' && !accepted.includes(type)) {
      throw new SinkTableError(name, column.name, `type ${accepted.join(' or ')}`, `type ${type}`);
    }
  }
  if (unique.length > 0) await checkUniqueKey(tx, expected, unique);
  const arrayTypes = new Map<string, string>();
  for (const row of rows) {
    if (row.column !== null && row.array_type !== null) arrayTypes.set(row.column, row.array_type);
  }
  return { types: found, arrayTypes };
}

/** The statement creating `table` when missing. */
export function createStatement({ quoted, columns, unique = [] }: ExpectedTable): string {
  const definitions = columns.map(
    (c) => `${quoteIdentifier('column', c.name)} ${c.type}${c.notNull === true ? ' NOT NULL' : ''}`,
  );
  if (unique.length > 0) {
    definitions.push(`PRIMARY KEY (${unique.map((c) => quoteIdentifier('column', c)).join(', ')})`);
  }
  return `CREATE TABLE IF NOT EXISTS ${quoted} (${definitions.join(', ')})`;
}

/** Each column's type and alike types as the database names them; a type it does not know fails. */
async function typeNames(
  tx: SinkTransaction,
  table: string,
  columns: readonly ExpectedColumn[],
): Promise<Map<string, string[]>> {
  const given = columns.flatMap((c) => [c.type, ...(c.alike === 'any' ? [] : (c.alike ?? []))]);
  const { rows } = await tx.query<{ given: string; type: string | null }>(
    'SELECT t AS given, format_type(to_regtype(t), NULL) AS type FROM unnest($1::text[]) AS t',
    [given],
  );
  const canonical = new Map(rows.map((row) => [row.given, row.type]));
  const types = new Map<string, string[]>();
  for (const column of columns) {
    const names = [column.type, ...(column.alike === 'any' ? [] : (column.alike ?? []))];
    types.set(
      column.name,
      names.map((type) => {
        const known = canonical.get(type);
        if (known === null || known === undefined) {
          throw new SinkTableError(table, column.name, `type ${type}`, 'no type of that name');
        }
        return known;
      }),
    );
  }
  return types;
}

/** Fails unless a unique index without predicate or expression is on exactly `unique`. */
async function checkUniqueKey(
  tx: SinkTransaction,
  { name, quoted }: ExpectedTable,
  unique: readonly string[],
): Promise<void> {
  const { rows } = await tx.query<{ columns: string[] }>(
    'SELECT ARRAY(SELECT a.attname::text FROM unnest(i.indkey::int2[]) AS k(n) ' +
      'JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.n) AS columns ' +
      'FROM pg_index AS i WHERE i.indrelid = to_regclass($1) AND i.indisunique ' +
      'AND i.indpred IS NULL AND i.indexprs IS NULL',
    [quoted],
  );
  const wanted = [...unique].sort().join(', ');
  if (rows.some((row) => [...row.columns].sort().join(', ') === wanted)) return;
  throw new SinkTableError(
    name,
    unique.join(', '),
    `a primary key or unique constraint on (${unique.join(', ')})`,
    rows.length === 0 ? 'none' : rows.map((row) => `one on (${row.columns.join(', ')})`).join(', '),
  );
}
