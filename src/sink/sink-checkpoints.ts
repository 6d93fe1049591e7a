import { CheckpointTable, DEFAULT_CHECKPOINT_TABLE, resumePoint } from './checkpoint-table.js';
import type { SinkDatabase } from '../database/sink-database.js';

/** A sink's checkpoint on one stream, as a (re)start of the sink would read it. */
export interface SinkCheckpoint {
  readonly stream: string;
  /** The last offset applied; -1 when nothing was. */
  readonly checkpoint: bigint;
  /** Where the sink resumes: the checkpoint + 1, or 'first' when nothing was applied. */
  readonly resumeFrom: bigint | 'first';
}

/**
 * The checkpoint of sink `sink` on each of `streams`, in their order, read from outside the
 * sink (its `positions()`, `stream-windows status --sink`) as the sink reads it on start. The
 * table is not created: one missing fails with the database's error (SQLSTATE 42P01).
 */
export async function readSinkCheckpoints(
  database: SinkDatabase,
  sink: string,
  streams: readonly string[],
  checkpointTable = DEFAULT_CHECKPOINT_TABLE,
): Promise<SinkCheckpoint[]> {
  const table = new CheckpointTable(checkpointTable);
  const read: SinkCheckpoint[] = [];
  // One at a time: a command's database port may hold a single connection.
  for (const stream of streams) {
    const checkpoint = await table.stored(database, sink, stream);
    read.push({ stream, checkpoint, resumeFrom: resumePoint(checkpoint) });
  }
  return read;
}
