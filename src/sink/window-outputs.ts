import { ConfigError } from '../common/errors.js';
import type { DecodedResult, ResultOutput } from '../result-format/result-format.js';
import { messageDecoder } from './message-decoder.js';
import { resultSideTables, type ResultSideOptions } from './result-side-tables.js';
import type { SinkShape } from './sink-shape.js';
import { quoteIdentifier } from './sql-identifier.js';
import { upsertRows } from './upsert.js';

/** The options of `windowOutputs`: the table a job's window outputs are upserted into. */
export interface WindowOutputsOptions<R> extends ResultSideOptions {
  /**
   * The table of the window outputs, one row per (key, window start): columns `key` (text; ''
   * for a job without `.key()`), `window_start` and `window_end` (timestamptz), `count`
   * (integer), and those `columns` gives, with a unique constraint on (key, window_start).
   */
  readonly table: string;
  /** The output's own columns (default `{ value: output.value }`). */
  readonly columns?: (output: ResultOutput<R>) => Readonly<Record<string, unknown>>;
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
  const sides = resultSideTables(options);
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
  return {
    decode,
    async apply(tx, batch) {
      const rows = batch.messages.flatMap(({ value }) =>
        value.outputs.map((output) => {
          if (output.continues) {
            throw new Error(
              `the output of key ${String(output.key)} continues a flushed window: ` +
                'upserting it would replace the part before it',
            );
          }
          return {
            ...columns(output),
            key: keyOf(output),
            window_start: new Date(output.start),
            window_end: new Date(output.end),
            count: output.count,
          };
        }),
      );
      await upsertRows(tx, { table, conflict: ['key', 'window_start'] }, rows);
      await sides(tx, batch);
    },
  };
}
