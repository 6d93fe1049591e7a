import { ConfigError } from '../common/errors.js';
import type { DecodedResult, ResultOutput } from '../result-format/result-format.js';
import { messageDecoder } from './message-decoder.js';
import { resultSideTables, type ResultSideOptions } from './result-side-tables.js';
import type { SinkShape } from './sink-shape.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import { upsertRows } from './upsert.js';

/** The options of `latestState`: the table each key's latest output is upserted into. */
export interface LatestStateOptions<R> extends ResultSideOptions {
  /** The table holding one row per entity, with a unique constraint on the `key` columns. */
  readonly table: string;
  /** The entity's key column(s): the rows' conflict target. */
  readonly key: string | readonly string[];
  /**
   * The column that orders an entity's states (a version, an event time): a row replaces the
   * stored one only when its value is higher, so a state that arrives late never wins.
   */
  readonly version: string;
  /** The row of an output: the key and version columns and the state's own. */
  readonly row: (output: ResultOutput<R>) => Readonly<Record<string, unknown>>;
}

/**
 * The latest state per entity (a compaction job's outputs, read as results), upserted with a
 * version guard: `... ON CONFLICT (key) DO UPDATE ... WHERE stored.version < excluded.version`.
 */
export function latestState<R = unknown>(
  options: LatestStateOptions<R>,
): SinkShape<DecodedResult<R>> {
  const table = quoteIdentifier('table', options.table, true);
  const key = typeof options.key === 'string' ? [options.key] : options.key;
  if (!Array.isArray(key) || key.length === 0) {
    throw new ConfigError('key', 'must be a column name or a non-empty list of them', options.key);
  }
  for (const column of key) quoteIdentifier('key', column);
  quoteIdentifier('version', options.version);
  const { row, version } = options;
  if (typeof row !== 'function') {
    throw new ConfigError('row', 'must be a function of an output', row);
  }
  const sides = resultSideTables(options);
  return {
    decode: messageDecoder<DecodedResult<R>>('result'),
    readsResults: true,
    prepare: (tx) => sides.prepare(tx),
    async apply(tx, batch) {
      const rows = batch.messages.flatMap(({ value }) => value.outputs.map(row));
      await upsertRows(tx, { table, conflict: key, guard: version }, rows);
      await sides.write(tx, batch);
    },
  };
}
