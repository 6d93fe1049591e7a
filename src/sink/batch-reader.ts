import type { ReadStart, Source, SourceChunk } from '../ports/ports.js';
import { messageAt } from '../ports/chunk-message.js';
import { OpenSteps } from './step-parts.js';

/** A message as read, before the sink's shape decodes it. */
export interface ReadMessage {
  readonly offset: bigint;
  readonly timestamp: number;
  readonly bytes: Uint8Array;
  /**
   * Whether a batch may end after this message: every step of a job's results whose parts
   * this message or an earlier one holds is whole after it (always true but with `wholeSteps`).
   */
  readonly stepsWhole: boolean;
}

export interface BatchLimits {
  /**
   * A batch holds at most this many messages; with `wholeSteps`, more when the remaining parts
   * of a step it holds the first of take it past this.
   */
  readonly maxMessages: number;
  /**
   * A batch is handed over this long after its first message came, full or not, ms; with
   * `wholeSteps`, once the steps it holds parts of are whole.
   */
  readonly maxDelayMs: number;
  /**
   * The messages are a job's results: a batch ends only where every step it holds parts of is
   * whole (see `OpenSteps`). A batch that would end inside a step is handed over without the
   * step's parts read so far; they begin the next batch, which waits for the step's last part
   * however long it takes.
   */
  readonly wholeSteps?: boolean;
}

/**
 * Reads `source` from `from` as batches by count and by time. Nothing is read while the
 * caller holds a batch (the generator waits at its `yield`): the stream's credit then stops
 * the broker, so the database's pace is the read's. Only while a batch waits for its time is
 * the next chunk asked for. Ends when `signal` aborts, or after the chunk that reaches `end`
 * (the batch it completes handed over first; with `wholeSteps`, without the parts of a step
 * not whole by then).
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
  const steps = limits.wholeSteps === true ? new OpenSteps() : undefined;
  let next: Promise<IteratorResult<SourceChunk>> | undefined;
  let pending: ReadMessage[] = [];
  /** How many of `pending` may be handed over: up to its last message with `stepsWhole`. */
  let whole = 0;
  /** When the first of `pending` past `whole` was read (performance.now() ms; `wholeSteps`). */
  let tailCame = 0;
  let deadline = 0;
  /** The batch `pending` may end at; what follows it (a step's first parts) begins the next. */
  const handOver = (): ReadMessage[] => {
    const batch = whole === pending.length ? pending : pending.slice(0, whole);
    pending = whole === pending.length ? [] : pending.slice(whole);
    whole = 0;
    deadline = tailCame + limits.maxDelayMs;
    return batch;
  };
  try {
    for (;;) {
      next ??= chunks.next();
      // Nothing to hand over yet (no message, or only parts of a step not whole): no deadline.
      const read = whole === 0 ? await next : await until(next, deadline);
      if (read === undefined) {
        yield handOver(); // its time is up; the chunk asked for stays asked
        continue;
      }
      next = undefined;
      if (read.done === true || signal.aborted) break;
      const chunk = read.value;
      for (let index = 0; index < chunk.count; index++) {
        if (pending.length === 0) deadline = performance.now() + limits.maxDelayMs;
        if (steps !== undefined && pending.length === whole) tailCame = performance.now();
        const bytes = messageAt(chunk, index);
        const stepsWhole = steps === undefined || steps.add(bytes);
        pending.push({
          offset: chunk.firstOffset + BigInt(index),
          timestamp: chunk.timestamp,
          bytes,
          stepsWhole,
        });
        if (stepsWhole) whole = pending.length;
        if (pending.length >= limits.maxMessages && whole > 0) yield handOver();
      }
      if (end !== undefined && chunk.firstOffset + BigInt(chunk.count) >= end) break;
    }
    if (whole > 0 && !signal.aborted) yield handOver();
  } finally {
    signal.removeEventListener('abort', stop);
    reading.abort();
    // The source ends its read on the abort: the chunk asked for settles, then the read closes.
    if (next !== undefined) await next.catch(() => undefined);
    await chunks.return?.();
  }
}

/**
 * `batch` cut after each message with `stepsWhole`: the shortest runs of it a transaction may
 * hold (a message each, but the messages of a step of several and any between them together).
 */
export function wholeStepRuns(batch: readonly ReadMessage[]): ReadMessage[][] {
  const runs: ReadMessage[][] = [];
  let run: ReadMessage[] = [];
  for (const message of batch) {
    run.push(message);
    if (message.stepsWhole) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length > 0) runs.push(run);
  return runs;
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
