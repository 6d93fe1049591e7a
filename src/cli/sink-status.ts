import type { Source } from '../ports/ports.js';
import { readSinkCheckpoints } from '../sink/sink-checkpoints.js';
import type { SinkDatabase } from '../database/sink-database.js';
import { streamLag, type StreamLag } from './stream-lag.js';

/** Where a database sink stands on one stream (a partition of a super stream) it reads. */
export interface SinkStatus extends StreamLag {
  /** The sink's name, as its checkpoint rows are keyed. */
  readonly sink: string;
  /** The stream read. */
  readonly source: string;
  /** The last offset applied, from the sink's checkpoint row; -1 when nothing was applied. */
  readonly checkpoint: bigint;
  /** Where the sink resumes: the checkpoint + 1, or 'first' when nothing was applied. */
  readonly resumeFrom: bigint | 'first';
  /** One past the source's last message (0 for an empty source). */
  readonly sourceEnd: bigint;
}

/**
 * Where sink `sink` stands on each of `sources`, in their order: its checkpoint as the sink
 * reads it on start (in `checkpointTable`, default 'stream_windows_checkpoints'), the source's
 * end and the lag as `jobStatus` measures a job's. The checkpoints are read before the ends:
 * while the sink runs, the lag shown may be more than it is by then, never less.
 */
export async function sinkStatus(
  database: SinkDatabase,
  sink: string,
  sources: readonly Source[],
  checkpointTable?: string,
): Promise<SinkStatus[]> {
  const checkpoints = await readSinkCheckpoints(
    database,
    sink,
    sources.map((source) => source.stream),
    checkpointTable,
  );
  const statuses: SinkStatus[] = [];
  // One stream at a time: each read of the broker opens its own subscription.
  for (const [i, source] of sources.entries()) {
    const { checkpoint, resumeFrom } = checkpoints[i] as (typeof checkpoints)[number];
    const sourceEnd = await source.endOffset();
    statuses.push({
      sink,
      source: source.stream,
      checkpoint,
      resumeFrom,
      sourceEnd,
      ...(await streamLag(source, resumeFrom, sourceEnd)),
    });
  }
  return statuses;
}
