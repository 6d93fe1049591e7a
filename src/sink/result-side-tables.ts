import type { DecodedResult } from '../result-format/result-format.js';
import type { SinkTransaction } from './sink-database.js';
import type { SinkBatch } from './sink-shape.js';
import { quoteIdentifier } from './sql-identifier.js';
import { jsonText } from '../common/json-text.js';

/** Where a result's late values and dead letters go (`windowOutputs`, `latestState`). */
export interface ResultSideOptions {
  /**
   * The table of the results' late values (a job's `late: 'side'`): columns `result_offset`
   * (bigint, the result message's offset), `position` (integer, the value's index in it) and
   * `value` (jsonb). Without it, a result carrying late values stops the sink (`SinkError`,
   * stage 'apply'): nothing is dropped silently.
   */
  readonly lateTable?: string;
  /**
   * The table of the results' dead letters (a job's `.onError('dead-letter')`): columns
   * `result_offset` (bigint), `source_offset` (bigint), `stage` (text), `error` (text) and
   * `message` (bytea, the source message). Without it, a result carrying dead letters stops
   * the sink, as for late values.
   */
  readonly deadLetterTable?: string;
}

/** Writes the late values and dead letters of a batch of results to their tables. */
export function resultSideTables(
  options: ResultSideOptions,
): (tx: SinkTransaction, batch: SinkBatch<DecodedResult>) => Promise<void> {
  const late =
    options.lateTable === undefined
      ? undefined
      : quoteIdentifier('lateTable', options.lateTable, true);
  const dead =
    options.deadLetterTable === undefined
      ? undefined
      : quoteIdentifier('deadLetterTable', options.deadLetterTable, true);
  return async (tx, batch) => {
    for (const { offset, value: result } of batch.messages) {
      if (result.late.length > 0) {
        if (late === undefined)
          throw new Error(unrouted('late values', result.late.length, 'lateTable'));
        for (const [position, value] of result.late.entries()) {
          await tx.query(
            `INSERT INTO ${late} (result_offset, position, value) VALUES ($1, $2, $3::text::jsonb)`,
            [offset.toString(), position, jsonText(value) ?? 'null'],
          );
        }
      }
      if (result.deadLetters.length > 0) {
        if (dead === undefined) {
          throw new Error(unrouted('dead letters', result.deadLetters.length, 'deadLetterTable'));
        }
        for (const letter of result.deadLetters) {
          await tx.query(
            `INSERT INTO ${dead} (result_offset, source_offset, stage, error, message) ` +
              'VALUES ($1, $2, $3, $4, $5)',
            [
              offset.toString(),
              letter.offset.toString(),
              letter.stage,
              letter.error,
              Buffer.from(letter.message),
            ],
          );
        }
      }
    }
  };
}

function unrouted(what: string, count: number, option: string): string {
  return `the result carries ${count} ${what} and the sink has no ${option} for them`;
}
