import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { createIfMissing } from '../database/create-if-missing.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import { quoteLiteral } from '../database/sql-literal.js';

/** The checkpoint table's default name. */
export const DEFAULT_CHECKPOINT_TABLE = 'stream_windows_checkpoints';

/** The stored offset of a (sink, stream) that applied nothing yet. */
export const NOTHING_APPLIED = -1n;

/** Where a sink resumes after `checkpoint`: the next offset, or the stream's first when nothing was applied. */
export function resumePoint(checkpoint: bigint): bigint | 'first' {
  return checkpoint === NOTHING_APPLIED ? 'first' : checkpoint + 1n;
}

/**
 * The sink's position: one row per (sink name, stream) holding the last offset applied. Read
 * and written inside each batch's transaction, so the row and the batch commit together.
 * Offsets are read as text: drivers return bigint columns differently (pg a string, PGlite a
 * number that loses precision past 2^53).
 */
export class CheckpointTable {
  private readonly table: string;

  constructor(name: string) {
    this.table = quoteIdentifier('checkpointTable', name, true);
  }

  /** Creates the table when missing (again when another instance created it meanwhile). */
  async create(database: SinkDatabase): Promise<void> {
    await createIfMissing(database, (tx) =>
      tx.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (` +
          'sink text NOT NULL, stream text NOT NULL, last_offset bigint NOT NULL, ' +
          'updated_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (sink, stream))',
      ),
    );
  }

  /** The last offset applied, read without a lock: where a (re)start resumes (+ 1). */
  async stored(database: SinkDatabase, sink: string, stream: string): Promise<bigint> {
    return database.transaction(async (tx) => {
      const { rows } = await tx.query<{ offset: string }>(
        `SELECT last_offset::text AS offset FROM ${this.table} WHERE sink = $1 AND stream = $2`,
        [sink, stream],
      );
      return rows[0] === undefined ? NOTHING_APPLIED : BigInt(rows[0].offset);
    });
  }

  /**
   * Takes the row for the batch `firstOffset`..`lastOffset`: locks it until the transaction
   * ends, moves it to `lastOffset`, and resolves with the checkpoint it held (the batch's
   * messages at or below it were applied already). A batch after the checkpoint, the common
   * case, takes ONE statement, which tells only that the checkpoint was below `firstOffset`: it
   * resolves with `firstOffset - 1`, which passes over the same messages (none). Otherwise (no
   * row yet, or another instance applied part of the batch) the row is inserted when missing,
   * read under its lock, and moved when `lastOffset` is past it. Another instance of the sink
   * waits on the lock, then sees what this one committed. Moving the checkpoint before the
   * batch's statements rather than after them changes nothing: the row and the batch commit
   * together or not at all.
   */
  async claim(
    tx: SinkTransaction,
    sink: string,
    stream: string,
    firstOffset: bigint,
    lastOffset: bigint,
  ): Promise<bigint> {
    // Under READ COMMITTED, an update that waited on another instance's lock checks its WHERE
    // again on the row that instance committed. Without parameters, the adapter may send it
    // with the transaction's BEGIN, in one round trip.
    const moved = await tx.query(
      `UPDATE ${this.table} SET last_offset = ${lastOffset}, updated_at = now() ` +
        `WHERE sink = ${quoteLiteral('name', sink)} AND stream = ${quoteLiteral('stream', stream)} ` +
        `AND last_offset < ${firstOffset}`,
    );
    if (moved.rowCount === 1) return firstOffset - 1n;
    await tx.query(
      `INSERT INTO ${this.table} (sink, stream, last_offset) VALUES ($1, $2, $3) ` +
        'ON CONFLICT (sink, stream) DO NOTHING',
      [sink, stream, NOTHING_APPLIED.toString()],
    );
    const { rows } = await tx.query<{ offset: string }>(
      `SELECT last_offset::text AS offset FROM ${this.table} ` +
        'WHERE sink = $1 AND stream = $2 FOR UPDATE',
      [sink, stream],
    );
    const row = rows[0];
    if (row === undefined) throw new Error(`the checkpoint row of '${stream}' was not found`);
    const checkpoint = BigInt(row.offset);
    if (lastOffset > checkpoint) {
      await tx.query(
        `UPDATE ${this.table} SET last_offset = $3, updated_at = now() ` +
          'WHERE sink = $1 AND stream = $2',
        [sink, stream, lastOffset.toString()],
      );
    }
    return checkpoint;
  }
}
