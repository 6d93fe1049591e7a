import { RetentionGapError } from '../common/errors.js';
import { nextTurn } from '../common/waits.js';
import type { SourceChunk } from '../ports/ports.js';
import type { LogChunk } from './stored-chunk.js';
import type { StreamLog } from './stream-log.js';

/**
 * The part of `chunk` at or after `from`, as a fresh copy: the port promises no message before
 * `from`, and a reader that mutates its buffer must not corrupt later replays.
 */
export function sliceFrom(chunk: SourceChunk, from: bigint): SourceChunk {
  const skip = from > chunk.firstOffset ? Number(from - chunk.firstOffset) : 0;
  const base = chunk.starts[skip] ?? 0;
  const end = chunk.count === 0 ? 0 : (chunk.ends[chunk.count - 1] ?? 0);
  const starts = chunk.starts.slice(skip);
  const ends = chunk.ends.slice(skip);
  for (let i = 0; i < starts.length; i++) {
    starts[i] = (starts[i] ?? 0) - base;
    ends[i] = (ends[i] ?? 0) - base;
  }
  return {
    firstOffset: chunk.firstOffset + BigInt(skip),
    timestamp: chunk.timestamp,
    count: chunk.count - skip,
    bytes: chunk.bytes.slice(base, end),
    starts,
    ends,
  };
}

/**
 * Chunks delivered between two turns of the event loop. Delivery and confirms here are
 * microtasks only, so a reader that never waits would hold the process (timers, sockets, an
 * HTTP server beside the job) until it caught up.
 */
const CHUNKS_PER_TURN = 16;

/**
 * Every chunk from `from` on, in order, waiting (without polling) for new ones until `signal`
 * aborts; then it simply ends. Every `CHUNKS_PER_TURN` chunks it lets the event loop turn. Throws `StreamNotFoundError` once the stream is deleted, as a
 * RabbitMQ subscription ends when its stream goes away, and `RetentionGapError` when the next
 * offset to deliver was removed by retention (before the read or while it paused).
 */
export async function* tail(
  log: StreamLog,
  from: bigint,
  signal: AbortSignal,
): AsyncGenerator<{ chunk: SourceChunk; writer: LogChunk['writer'] }> {
  let next = from < 0n ? 0n : from;
  let delivered = 0;
  while (!signal.aborted) {
    if (++delivered % CHUNKS_PER_TURN === 0) await nextTurn();
    log.assertExists();
    // Looked up by offset each time, not by index: retention shifts the chunk list.
    const chunk = log.chunks[log.chunkIndexAt(next)];
    if (chunk === undefined) {
      await log.changed(signal);
      continue;
    }
    // Offsets between `next` and the chunk are a gap retention made only when they are below
    // the first stored offset; otherwise tracking chunks (storeOffset) took them.
    if (next < log.firstOffset) throw new RetentionGapError(log.name, next, log.firstOffset);
    yield { chunk: sliceFrom(chunk, next), writer: chunk.writer };
    next = chunk.firstOffset + BigInt(chunk.count);
  }
}
