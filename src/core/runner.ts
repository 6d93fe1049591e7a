import { isRetriable, OutputTooLargeError, ProcessingError } from '../common/errors.js';
import { OrderedPublisher } from './ordered-publisher.js';
import type { Source, SourceChunk, Target } from './ports.js';
import { StepProcessor, type StepProcessorConfig } from './step-processor.js';
import type { StepResult } from './step-result.js';
import { writeSize } from './write-size.js';

export interface RunOptions {
  /** Stops the job: the step in progress is dropped (it is re-read on the next start). */
  readonly signal?: AbortSignal;
  /**
   * Stop once every message that was in the source when the job (re)started has been
   * processed, instead of waiting for more — for batch use and tests. The open step is
   * not published: it is incomplete, and publishing it would break replay stability.
   */
  readonly untilCaughtUp?: boolean;
}

export interface RunSummary {
  /** New results this run stored: publishes the broker confirmed and did not discard. */
  readonly results: number;
  /**
   * Results published again after a restart and confirmed as duplicates (publishing id not
   * above the last one read at the resume), which the broker discarded.
   */
  readonly duplicates: number;
  /** Times the job resumed from the broker's last publishing id after a retriable error. */
  readonly restarts: number;
}

export interface RunnerConfig<T, A, R> {
  readonly source: Source;
  readonly target: Target;
  readonly processor: StepProcessorConfig<T, A, R>;
  readonly encode: (result: StepResult<R>) => Uint8Array[];
  /** Results awaiting their confirm at once (default 32). */
  readonly maxInFlight: number;
  /** Delay before resuming after a retriable error, doubled each time up to `maxRetryDelayMs`. */
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
}

/**
 * The read-process-write loop. It owns offsets and publishing ids: on start it asks the
 * target for its producer's last publishing id and reads the source from there + 1 (0 is
 * ambiguous and means "from the first offset still stored"; re-publishing id 0 is discarded by the
 * broker, so it is harmless); each step's result is published with the offset of the
 * step's last source message as its publishing id. A retriable error is handled like a
 * crash: everything since the last confirmed result is recomputed, and the broker
 * discards what it already has.
 */
export class Runner<T, A, R> {
  constructor(private readonly config: RunnerConfig<T, A, R>) {}

  async run(options: RunOptions = {}): Promise<RunSummary> {
    const counters = { results: 0, duplicates: 0, restarts: 0 };
    let delay = this.config.retryDelayMs;
    // A function, not a narrowed property: the signal may abort during any await below.
    const aborted = (): boolean => options.signal?.aborted === true;
    for (;;) {
      if (aborted()) return counters; // stopped before the start, or during the backoff
      try {
        await this.runFromResumePoint(options, counters);
        return counters;
      } catch (error) {
        if (!isRetriable(error) || aborted()) throw error;
        counters.restarts++;
        await sleep(delay, options.signal);
        delay = Math.min(delay * 2, this.config.maxRetryDelayMs);
      }
    }
  }

  private async runFromResumePoint(
    options: RunOptions,
    counters: { results: number; duplicates: number },
  ): Promise<void> {
    const { source, target } = this.config;
    const last = await target.lastPublishingId();
    const end = options.untilCaughtUp === true ? await source.endOffset() : -1n;
    if (options.untilCaughtUp === true && (end === 0n || (last > 0n && last + 1n >= end))) return;

    const processor = new StepProcessor(this.config.processor);
    const publisher = new OrderedPublisher(target, this.config.maxInFlight);
    // Reading from last + 1, only a result for offset 0 can be one the broker already has,
    // and only when the last id is 0: then it is a duplicate if the producer did publish.
    // Asked once, before that publish (after it, the answer would be yes either way).
    let zeroWasStored: Promise<boolean> | undefined;
    const countResult = (): void => void counters.results++;
    const countDuplicate = (): void => void counters.duplicates++;
    const zeroStored = (): Promise<boolean> => (zeroWasStored ??= target.hasPublished());
    // Aborted while the resume point was asked for: an abort listener added now would never
    // fire, so the reader is handed a signal that already knows.
    const reading = new AbortController();
    const signal =
      options.signal === undefined
        ? reading.signal
        : AbortSignal.any([options.signal, reading.signal]);
    if (signal.aborted) return;
    try {
      for await (const chunk of this.readFromResumePoint(last, signal)) {
        let failure: { error: unknown } | undefined;
        try {
          processor.process(chunk);
        } catch (error) {
          failure = { error };
        }
        // Steps that ended before a failing message are complete: publish them first.
        for (const result of processor.ready) {
          const id = result.lastOffset;
          const duplicate = id === 0n && last === 0n && (await zeroStored());
          // Counted on the confirm: a publish lost with its connection is published again.
          await publisher.publish(
            id,
            this.encode(result),
            duplicate ? countDuplicate : countResult,
          );
        }
        processor.ready.length = 0;
        if (failure !== undefined) throw failure.error;
        if (end >= 0n && chunk.firstOffset + BigInt(chunk.count) >= end) break;
      }
      await publisher.drain();
    } catch (error) {
      // Whatever stopped us, let the confirms already under way land before reporting.
      await publisher.drain().catch(() => undefined);
      throw error;
    } finally {
      reading.abort();
    }
  }

  /**
   * The source from the broker's resume point: `last + 1`. A last publishing id of 0 means
   * "never published" or "published offset 0", so the job reads from 'first'. The two part
   * only when retention removed the source's head: if the first offset delivered is above 1
   * and the producer did publish (offset 0), the job must resume at 1, so the source is read
   * from there instead and reports the removed offsets rather than skip them.
   */
  private async *readFromResumePoint(
    last: bigint,
    signal: AbortSignal,
  ): AsyncIterable<SourceChunk> {
    const { source, target } = this.config;
    if (last > 0n) {
      yield* source.read(last + 1n, signal);
      return;
    }
    let checked = false;
    let resumeAtOne = false;
    for await (const chunk of source.read('first', signal)) {
      if (!checked) {
        checked = true;
        resumeAtOne = chunk.firstOffset > 1n && (await target.hasPublished());
        if (resumeAtOne) break;
      }
      yield chunk;
    }
    if (resumeAtOne) yield* source.read(1n, signal);
  }

  private encode(result: StepResult<R>): Uint8Array[] {
    let messages: Uint8Array[];
    try {
      messages = this.config.encode(result);
    } catch (cause) {
      // An aggregate value msgpack cannot carry: the job stops before publishing it.
      throw new ProcessingError(this.config.source.stream, result.lastOffset, 'encode', cause);
    }
    const size = writeSize(messages);
    if (size > this.config.target.maxWriteBytes) {
      throw new OutputTooLargeError(
        this.config.source.stream,
        result.firstOffset,
        result.lastOffset,
        size,
        this.config.target.maxWriteBytes,
        result.deadLetters.length,
      );
    }
    return messages;
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });
}
