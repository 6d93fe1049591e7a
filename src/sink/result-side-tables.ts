import type { DecodedResult } from '../result-format/result-format.js';
import type { SinkTransaction } from '../database/sink-database.js';
import type { SinkBatch } from './sink-shape.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import { jsonText } from '../common/json-text.js';
import { ensureTable, type ExpectedColumn, type ExpectedTable } from './expected-table.js';

/** Where a result's late values and dead letters go (`windowOutputs`, `latestState`). */
export interface ResultSideOptions {
  /**
   * The table of the results' late values (a job's `late: 'side'`): columns `result_offset`
   * (bigint, the result message's offset), `position` (integer, the value's index in it) and
   * `value` (jsonb); created when missing, checked at the sink's start. Without it, a result
   * carrying late values stops the sink (`SinkError`, stage 'apply'): nothing is dropped
   * silently.
   */
  readonly lateTable?: string;
  /**
   * The table of the results' dead letters (a job's `.onError('dead-letter')`): columns
   * `result_offset` (bigint), `source_offset` (bigint), `stage` (text), `error` (text) and
   * `message` (bytea, the source message); created when missing, checked at the sink's start.
   * Without it, a result carrying dead letters stops the sink, as for late values.
   */
  readonly deadLetterTable?: string;
}

const OFFSET: Omit<ExpectedColumn, 'name'> = { type: 'bigint', alike: ['numeric'], notNull: true };
const TEXT: Omit<ExpectedColumn, 'name'> = { type: 'text', alike: ['varchar'], notNull: true };

const LATE_COLUMNS: readonly ExpectedColumn[] = [
  { name: 'result_offset', ...OFFSET },
  { name: 'position', type: 'integer', alike: ['bigint'], notNull: true },
  { name: 'value', type: 'jsonb', alike: ['json'], notNull: true },
];

const DEAD_COLUMNS: readonly ExpectedColumn[] = [
  { name: 'result_offset', ...OFFSET },
  { name: 'source_offset', ...OFFSET },
  { name: 'stage', ...TEXT },
  { name: 'error', ...TEXT },
  { name: 'message', type: 'bytea', notNull: true },
];

/** A result's side tables: created and checked at the start, written with each batch. */
export interface ResultSides {
  /** Creates the side tables given when missing and checks them (`ensureTable`). */
  prepare(tx: SinkTransaction): Promise<void>;
  /** Writes the late values and dead letters of a batch of results to their tables. */
  write(tx: SinkTransaction, batch: SinkBatch<DecodedResult>): Promise<void>;
}

/** The side tables of `options`: late values and dead letters. */
export function resultSideTables(options: ResultSideOptions): ResultSides {
  const side = (
    option: keyof ResultSideOptions,
    columns: readonly ExpectedColumn[],
  ): ExpectedTable | undefined => {
    const name = options[option];
    return name === undefined
      ? undefined
      : { name, quoted: quoteIdentifier(option, name, true), columns };
  };
  const lateTable = side('lateTable', LATE_COLUMNS);
  const deadTable = side('deadLetterTable', DEAD_COLUMNS);
  const late = lateTable?.quoted;
  const dead = deadTable?.quoted;
  const prepare = async (tx: SinkTransaction): Promise<void> => {
    for (const table of [lateTable, deadTable])
      if (table !== undefined) await ensureTable(tx, table);
  };
  return { prepare, write };

  async function write(tx: SinkTransaction, batch: SinkBatch<DecodedResult>): Promise<void> {
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
  }
}

function unrouted(what: string, count: number, option: string): string {
  return `the result carries ${count} ${what} and the sink has no ${option} for them`;
}
