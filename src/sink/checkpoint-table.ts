import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { createIfMissing } from '../database/create-if-missing.js';
import { quoteIdentifier } from '../database/sql-identifier.js';

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
   * The last offset applied, the row locked until the transaction ends (created first when
   * missing): another instance of the sink waits here, then sees what this one committed.
   */
  async lock(tx: SinkTransaction, sink: string, stream: string): Promise<bigint> {
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
    return BigInt(row.offset);
  }

  /** Records `offset` as the last applied, in the transaction holding the row's lock. */
  async advance(tx: SinkTransaction, sink: string, stream: string, offset: bigint): Promise<void> {
    await tx.query(
      `UPDATE ${this.table} SET last_offset = $3, updated_at = now() WHERE sink = $1 AND stream = $2`,
      [sink, stream, offset.toString()],
    );
  }
}
