// The job of the multi-write SIGKILL test and of its child process: one-second step windows,
// each holding one message of every key k0..k99999, so that each step's result has 100,000
// outputs and takes several writes of a target's default limit (about 1 MB each); and its
// source messages, the same bytes whichever broker stores them; and the shape of the database
// sink that reads the job's target into PostgreSQL beside it.
import {
  aggregate,
  jsonMessage,
  windowOutputs,
  type DecodedResult,
  type Runner,
  type SinkShape,
  type Source,
  type Target,
} from '../../../src/index.js';

export const WIDE_STEPS_PRODUCER = 'wide-steps-job';
/** Keys per window, and so outputs per step. */
export const WIDE_KEYS = 100_000;
const T0 = Date.UTC(2026, 0, 1);

export interface KeyedValue {
  readonly k: number;
  readonly v: number;
}

/**
 * The source of `windows` steps: message `i` of window `w` (offset `w * WIDE_KEYS + i`) is key
 * `i`'s, inside second `w`; one more message opens window `windows` and so closes the last.
 */
export function wideStepsSource(windows: number): Uint8Array[] {
  const messages: Uint8Array[] = [];
  for (let w = 0; w <= windows; w++) {
    const count = w === windows ? 1 : WIDE_KEYS;
    for (let i = 0; i < count; i++) {
      messages.push(jsonMessage(wideValue(w, i), { creationTime: T0 + w * 1000 + (i % 1000) }));
    }
  }
  return messages;
}

/** The value of key `i` in window `w`: what the source's message for it holds. */
export const wideValue = (w: number, i: number): KeyedValue => ({ k: i, v: (i + w) % 10 });

/** The last source offset of step `w` (0-based) of {@link wideStepsSource}. */
export const wideStepLastOffset = (w: number): bigint => BigInt((w + 1) * WIDE_KEYS - 1);

/** The job: per key `k<k>` and one-second window, the sum of its values. */
export function wideStepsJob(source: Source, target: Target): Runner<KeyedValue, number, number> {
  return aggregate<KeyedValue>(source)
    .tumbling('1s')
    .key((m) => `k${m.k}`)
    .reduce((sum, m) => sum + m.v, 0)
    .to(target);
}

/** The database sink's table of the job's outputs: (key, window) and its sum, `total`. */
export const WIDE_TOTALS_TABLE = 'wide_totals';
/**
 * What each transaction the sink committed held, written in that transaction: its offsets,
 * the parts of its messages (step's last source offset, index, count) and the table's rows per
 * window start (epoch ms) after it.
 */
export const WIDE_COMMITS_TABLE = 'wide_commits';

/** The statement the test makes {@link WIDE_COMMITS_TABLE} with. */
export const WIDE_COMMITS_DDL =
  `CREATE TABLE ${WIDE_COMMITS_TABLE} (id serial PRIMARY KEY, first_offset bigint NOT NULL, ` +
  'last_offset bigint NOT NULL, parts jsonb NOT NULL, windows jsonb NOT NULL)';

/** A part of a step as {@link WIDE_COMMITS_TABLE} lists it: [step's last source offset, index, count]. */
export type CommittedPart = [string, number | null, number | null];

/**
 * The sink shape of the test's database sink: the job's outputs upserted into
 * {@link WIDE_TOTALS_TABLE} by `windowOutputs`, and, in the same transaction, a row of
 * {@link WIDE_COMMITS_TABLE} saying what the transaction held. `onApply` is told when a
 * transaction begins to apply its batch.
 */
export function wideStepsSinkShape(
  onApply: () => void = () => undefined,
): SinkShape<DecodedResult<number>> {
  const outputs = windowOutputs<number>({
    table: WIDE_TOTALS_TABLE,
    columns: (output) => ({ total: output.value }),
    columnTypes: { total: 'bigint' },
  });
  return {
    ...outputs,
    async apply(tx, batch) {
      onApply();
      await outputs.apply(tx, batch);
      const parts: CommittedPart[] = batch.messages.map(({ value }) => [
        value.lastOffset.toString(),
        value.part?.index ?? null,
        value.part?.of ?? null,
      ]);
      await tx.query(
        `INSERT INTO ${WIDE_COMMITS_TABLE} (first_offset, last_offset, parts, windows) ` +
          "SELECT $1, $2, $3::jsonb, coalesce(jsonb_object_agg(w, n), '{}') FROM (" +
          'SELECT (extract(epoch FROM window_start) * 1000)::bigint AS w, count(*) AS n ' +
          `FROM ${WIDE_TOTALS_TABLE} GROUP BY 1) AS counts`,
        [batch.firstOffset.toString(), batch.lastOffset.toString(), JSON.stringify(parts)],
      );
    },
  };
}
