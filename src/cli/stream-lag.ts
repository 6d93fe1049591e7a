import type { Source } from '../ports/ports.js';
import { firstChunk } from './first-chunk.js';
import { settled } from './settled.js';
import type { Style } from './style.js';
import { isoTime, table } from './table.js';

/** How far a reader of a stream (a job, a sink) is behind the stream's end. */
export interface StreamLag {
  /** Source messages from the resume point to the end: what the reader has still to read. */
  readonly lagMessages: bigint;
  /**
   * Broker time between the chunk holding the resume point and the source's last chunk, ms
   * (0 when caught up): how far behind the reader is in the source's own clock.
   */
  readonly lagMs: number;
  /** Broker timestamp (epoch ms) of the chunk holding the resume point; undefined: caught up. */
  readonly resumeChunkTime: number | undefined;
  /** Broker timestamp (epoch ms) of the source's last chunk; undefined when caught up. */
  readonly lastChunkTime: number | undefined;
}

/**
 * The lag of a reader resuming at `resumeFrom` on `source`, whose end offset is `sourceEnd`:
 * the timestamps of two chunks, each read as the first delivery of a read that stops there.
 */
export async function streamLag(
  source: Source,
  resumeFrom: bigint | 'first',
  sourceEnd: bigint,
): Promise<StreamLag> {
  const caughtUp = sourceEnd === 0n || (resumeFrom !== 'first' && resumeFrom >= sourceEnd);
  if (caughtUp) {
    return { lagMessages: 0n, lagMs: 0, resumeChunkTime: undefined, lastChunkTime: undefined };
  }
  // The chunk holding the last message is the last chunk of messages.
  const [resumeChunk, lastChunk] = await settled(
    firstChunk(source, resumeFrom),
    firstChunk(source, sourceEnd - 1n),
  );
  return {
    lagMessages: sourceEnd - resumeChunk.firstOffset,
    lagMs: Math.max(0, lastChunk.timestamp - resumeChunk.timestamp),
    resumeChunkTime: resumeChunk.timestamp,
    lastChunkTime: lastChunk.timestamp,
  };
}

/** The line under a status table that dates a lagging reader's two chunks; undefined when caught up. */
export function chunkTimesLine(stream: string, lag: StreamLag): string | undefined {
  if (lag.resumeChunkTime === undefined || lag.lastChunkTime === undefined) return undefined;
  return (
    `${stream}: resume point's chunk written ${isoTime(lag.resumeChunkTime)}, ` +
    `last chunk ${isoTime(lag.lastChunkTime)}`
  );
}

/**
 * A status table, one row per reader (a job, a sink; a relay, its rows behind as its lag):
 * green when caught up, yellow while it lags (coloured after the padding, which must count
 * visible characters only).
 */
export function lagTable(
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  lags: readonly Pick<StreamLag, 'lagMessages'>[],
  style: Style,
): string[] {
  const [header, ...body] = table(headers, rows, style);
  return [
    header ?? '',
    ...body.map((row, i) => (lags[i]?.lagMessages === 0n ? style.green : style.yellow)(row)),
  ];
}
