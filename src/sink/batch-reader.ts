import type { ReadStart, Source, SourceChunk } from '../ports/ports.js';
import { messageAt } from '../ports/chunk-message.js';

/** A message as read, before the sink's shape decodes it. */
export interface ReadMessage {
  readonly offset: bigint;
  readonly timestamp: number;
  readonly bytes: Uint8Array;
}

export interface BatchLimits {
  /** A batch holds at most this many messages. */
  readonly maxMessages: number;
  /** A batch is handed over this long after its first message came, full or not, ms. */
  readonly maxDelayMs: number;
}

/**
 * Reads `source` from `from` as batches by count and by time. Nothing is read while the
 * caller holds a batch (the generator waits at its `yield`): the stream's credit then stops
 * the broker, so the database's pace is the read's. Only while a batch waits for its time is
 * the next chunk asked for. Ends when `signal` aborts, or after the chunk that reaches `end`
 * (the batch it completes handed over first).
 */
export async function* readBatches(
  source: Source,
  from: ReadStart,
  signal: AbortSignal,
  limits: BatchLimits,
  end: bigint | undefined,
): AsyncGenerator<ReadMessage[], void, undefined> {
  const reading = new AbortController();
  const stop = (): void => reading.abort();
  signal.addEventListener('abort', stop, { once: true });
  const chunks = source.read(from, reading.signal)[Symbol.asyncIterator]();
  let next: Promise<IteratorResult<SourceChunk>> | undefined;
  let pending: ReadMessage[] = [];
  let deadline = 0;
  try {
    for (;;) {
      next ??= chunks.next();
      const read = pending.length === 0 ? await next : await until(next, deadline);
      if (read === undefined) {
        yield pending; // its time is up; the chunk asked for stays asked
        pending = [];
        continue;
      }
      next = undefined;
      if (read.done === true || signal.aborted) break;
      const chunk = read.value;
      for (let index = 0; index < chunk.count; index++) {
        if (pending.length === 0) deadline = performance.now() + limits.maxDelayMs;
        pending.push({
          offset: chunk.firstOffset + BigInt(index),
          timestamp: chunk.timestamp,
          bytes: messageAt(chunk, index),
        });
        if (pending.length >= limits.maxMessages) {
          yield pending;
          pending = [];
        }
      }
      if (end !== undefined && chunk.firstOffset + BigInt(chunk.count) >= end) break;
    }
    if (pending.length > 0 && !signal.aborted) yield pending;
  } finally {
    signal.removeEventListener('abort', stop);
    reading.abort();
    // The source ends its read on the abort: the chunk asked for settles, then the read closes.
    if (next !== undefined) await next.catch(() => undefined);
    await chunks.return?.();
  }
}

/** `next`'s result, or undefined once `deadline` (performance.now() ms) passes first. */
async function until<T>(next: Promise<T>, deadline: number): Promise<T | undefined> {
  const wait = deadline - performance.now();
  if (wait <= 0) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      next,
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), wait))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
