import { ConfigError } from '../common/errors.js';
import type { DecodedResult, ResultOutput } from '../result-format/result-format.js';
import { jsonText } from '../common/json-text.js';
import { ensureTable, type ExpectedColumn } from './expected-table.js';
import { messageDecoder } from './message-decoder.js';
import { resultSideTables, type ResultSideOptions } from './result-side-tables.js';
import type { SinkShape } from './sink-shape.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import { upsertRows } from './upsert.js';

/** The options of `windowOutputs`: the table a job's window outputs are upserted into. */
export interface WindowOutputsOptions<R> extends ResultSideOptions {
  /**
   * The table of the window outputs, one row per (key, window start): columns `key` (text; ''
   * for a job without `.key()`), `window_start` and `window_end` (timestamptz), `count`
   * (integer), and those `columns` gives, with a unique constraint on (key, window_start).
   * Created when missing (with `columnTypes` for your own columns) and checked at the sink's
   * start: a column missing or of another type, or no such unique key, stops the sink there
   * (`SinkTableError`).
   */
  readonly table: string;
  /**
   * The output's own columns (default `{ value: output.value }`, a `value jsonb` column: written
   * as JSON when the table's `value` is json or jsonb).
   */
  readonly columns?: (output: ResultOutput<R>) => Readonly<Record<string, unknown>>;
  /**
   * The SQL types of the columns `columns` returns (`{ cents: 'bigint' }`): the table is created
   * with them when missing, and an existing table must have them. Without it, custom `columns`
   * need a table you created (the sink checks its standard columns at the start, yours at the
   * first insert).
   */
  readonly columnTypes?: Readonly<Record<string, string>>;
}

/** The columns every window output writes, before the output's own. */
const STANDARD_COLUMNS: readonly ExpectedColumn[] = [
  { name: 'key', type: 'text', alike: ['varchar'], notNull: true },
  { name: 'window_start', type: 'timestamptz', notNull: true },
  { name: 'window_end', type: 'timestamptz', notNull: true },
  { name: 'count', type: 'integer', alike: ['bigint', 'numeric'], notNull: true },
];

/** A SQL type as a column definition takes it: words, a precision, array brackets; nothing else. */
const TYPE_NAME = /^[A-Za-z_][\w$.]*( [A-Za-z_][\w$]*)*( ?\(\d+( ?, ?\d+)?\))?(\[\])*$/;

/** The output's own columns the table is created with and checked for; undefined when not known. */
function ownColumns(options: WindowOutputsOptions<unknown>): ExpectedColumn[] | undefined {
  const { columnTypes } = options;
  if (columnTypes === undefined) {
    // The default `value` is created jsonb, but a table of yours may hold it in any type.
    return options.columns === undefined
      ? [{ name: 'value', type: 'jsonb', alike: 'any' }]
      : undefined;
  }
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
  if (typeof columnTypes !== 'object' || columnTypes === null) {
    throw new ConfigError(
      'columnTypes',
      'must be an object of column names to SQL types',
      columnTypes,
    );
  }
  return Object.entries(columnTypes).map(([name, type]) => {
    quoteIdentifier('columnTypes', name);
    if (STANDARD_COLUMNS.some((column) => column.name === name)) {
      throw new ConfigError(
        'columnTypes',
        `must not name the standard column '${name}'`,
        columnTypes,
      );
    }
    if (typeof type !== 'string' || !TYPE_NAME.test(type)) {
      throw new ConfigError(
        'columnTypes',
        `must give '${name}' a SQL type name ('bigint', 'numeric(12,2)', 'text[]')`,
        type,
      );
    }
    return { name, type };
  });
}

/**
 * A job's window outputs (its target stream, read as results) upserted by their natural key
 * (key, window start): a later output of a window (an early update's final, say) replaces the
 * earlier. A flushed window's continuation (`continues`) would replace the part before it, so
 * it stops the sink: merge those with `eachBatch`.
 */
export function windowOutputs<R = unknown>(
  options: WindowOutputsOptions<R>,
): SinkShape<DecodedResult<R>> {
  const table = quoteIdentifier('table', options.table, true);
  const columns = options.columns ?? ((output) => ({ value: output.value }));
  if (typeof columns !== 'function') {
    throw new ConfigError('columns', 'must be a function of a window output', columns);
  }
  const own = ownColumns(options as WindowOutputsOptions<unknown>);
  const expected = {
    name: options.table,
    quoted: table,
    columns: [...STANDARD_COLUMNS, ...(own ?? [])],
    unique: ['key', 'window_start'],
    notCreatable:
      own === undefined
        ? 'create it, or give columnTypes for the columns of your columns function'
        : undefined,
  };
  const sides = resultSideTables(options);
  // The default `value` into a json or jsonb column goes as JSON text: as it is, pg would send
  // a string unquoted and an array as a PostgreSQL array, neither of them JSON.
  let valueAsJson = false;
  // The table's columns' array types, read at the start: the rows then go as one statement.
  let arrayTypes: ReadonlyMap<string, string> | undefined;
  const decode = messageDecoder<DecodedResult<R>>('result');
  // The key column is text: a number key 1 and a string key '1' would be one row, so the
  // outputs' keys must keep the type of the first one seen.
  let keyType: string | undefined;
  const keyOf = (output: ResultOutput<R>): string => {
    const type = output.key === null ? 'none' : typeof output.key;
    keyType ??= type;
    if (type !== keyType) {
      throw new Error(
        `the output of key ${JSON.stringify(output.key)} has a key of type ${type} where ` +
          `earlier outputs' keys were of type ${keyType}: the text column 'key' would merge ` +
          'keys of both types that print alike (1 and "1")',
      );
    }
    return output.key === null ? '' : String(output.key);
  };
  // The default `value` in a row of one shape (a row spread from another object costs more
  // than the rest of the sink's work on it); the standard columns after a function's own.
  const rowOf =
    options.columns === undefined
      ? (output: ResultOutput<R>) => ({
          value: valueAsJson ? (jsonText(output.value) ?? null) : output.value,
          key: keyOf(output),
          window_start: new Date(output.start),
          window_end: new Date(output.end),
          count: output.count,
        })
      : (output: ResultOutput<R>) => ({
          ...columns(output),
          key: keyOf(output),
          window_start: new Date(output.start),
          window_end: new Date(output.end),
          count: output.count,
        });
  return {
    decode,
    readsResults: true,
    async prepare(tx) {
      const found = await ensureTable(tx, expected);
      const valueType = found.types.get('value');
      arrayTypes = found.arrayTypes;
      valueAsJson =
        options.columns === undefined && (valueType === 'jsonb' || valueType === 'json');
      await sides.prepare(tx);
    },
    async apply(tx, batch) {
      const rows: Readonly<Record<string, unknown>>[] = [];
      for (const { value } of batch.messages) {
        for (const output of value.outputs) {
          if (output.continues) {
            throw new Error(
              `the output of key ${String(output.key)} continues a flushed window: ` +
                'upserting it would replace the part before it',
            );
          }
          rows.push(rowOf(output));
        }
      }
      await upsertRows(tx, { table, conflict: ['key', 'window_start'], arrayTypes }, rows);
      await sides.write(tx, batch);
    },
  };
}
