import type { RunOptions, RunSummary } from '../api/run-options.js';
import {
  isRetriable,
  OutputTooLargeError,
  ProcessingError,
  SourceDeactivatedError,
  StreamWindowsError,
} from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import {
  JobEvents,
  type JobEventName,
  type JobListener,
  type ListenerOptions,
} from '../api/job-events.js';
import { OrderedPublisher } from './ordered-publisher.js';
import type { GroupObserver, Source, SourceChunk, Target } from '../ports/ports.js';
import type { StepResult } from '../result-format/step-result.js';
import { createProcessor, type ProcessorConfig } from './processor-factory.js';
import type { Processor } from './processor.js';
import { ResumePoint, resumesAtOne, type FoundStart } from './resume/resume-point.js';
import type { JobDefinitionCheck } from './resume/definition-check.js';
import { writeSize } from '../ports/write-size.js';
import { skipReference, skipsThrough, stopReference } from './skip-request.js';
import { IDLE, orIdle } from '../ports/idle-timeout.js';

/**
 * The result type of a job, for typing what reads its target:
 * `decodeResult<ResultOf<typeof job>>(bytes).outputs[0].value` and
 * `readResults<ResultOf<typeof job>>(source)` are typed as the job's aggregate result.
 */
export type ResultOf<Job> = Job extends Runner<infer _T, infer _A, infer R> ? R : never;

export interface RunnerConfig<T, A, R> {
  readonly source: Source;
  readonly target: Target;
  /** A step processor's, or for event-time windows a window operator's (./processor-factory.ts). */
  readonly processor: ProcessorConfig<T, A, R>;
  readonly encode: (result: StepResult<R>) => Uint8Array[];
  /** Results awaiting their confirm at once (default 32). */
  readonly maxInFlight: number;
  /** The routing key of a step's result, for a super-stream target; none for one stream. */
  readonly route: ((result: StepResult<R>) => string) | undefined;
  /** Delay before resuming after a retriable error, doubled each time up to `maxRetryDelayMs`. */
  readonly retryDelayMs: number;
  readonly maxRetryDelayMs: number;
  readonly logger: Logger;
  /**
   * The job's definition its results carry (`sw-job`, see job-definition.ts), checked at every
   * start against the producer's last result; undefined with the user's own `encode`, whose
   * messages carry none. `allowChange`: a last result of another definition is gone on from,
   * with a warning, instead of stopping the job.
   */
  readonly definition: JobDefinitionCheck | undefined;
  /**
   * The name an earlier version gave this loop's producer (a partitioned job's, see
   * `.toPartitions()`): a start whose producer never published stops with a
   * ProducerRenamedError if that name did. Undefined: not checked.
   */
  readonly formerProducer?: string | undefined;
  /** When open windows are published before they end (see `FlushOptions`). */
  readonly flush: {
    readonly caughtUp: boolean;
    readonly idleMs: number | undefined;
    /**
     * The job writes the library's result format (not its own `encode`): a flushing step job's
     * start reads its last result back, to reopen the window a flush left open
     * (./resume/after-flush.ts).
     */
    readonly resultFormat: boolean;
  };
}

/**
 * The read-process-write loop. It owns offsets and publishing ids: on start (for a single
 * active consumer source, once activated) it asks the target for its producer's last
 * publishing id and reads the source from there + 1 (0 is
 * ambiguous and means "from the first offset still stored"; re-publishing id 0 is discarded by the
 * broker, so it is harmless); each step's result is published with the offset of the
 * step's last source message as its publishing id. A retriable error is handled like a
 * crash: everything since the last confirmed result is recomputed, and the broker
 * discards what it already has.
 */
export class Runner<T, A, R> {
  private readonly events: JobEvents;
  private publisher: OrderedPublisher | undefined;
  private readonly resumePoint: ResumePoint;

  constructor(private readonly config: RunnerConfig<T, A, R>) {
    this.events = new JobEvents((name, error) =>
      config.logger.error(
        { ...this.where(), event: name, err: error },
        `a listener of '${name}' threw; the job goes on`,
      ),
    );
    this.resumePoint = new ResumePoint({
      target: config.target,
      logger: config.logger,
      where: () => this.where(),
      definition: config.definition,
      formerProducer: config.formerProducer,
    });
  }

  get source(): Source {
    return this.config.source;
  }

  get target(): Target {
    return this.config.target;
  }

  /** Results published and awaiting their confirm now. */
  get inFlight(): number {
    return this.publisher?.unconfirmed ?? 0;
  }

  /**
   * Observes the job (see JobEventMap for what each event carries); returns the function
   * that removes the listener. Listeners run synchronously: keep them quick.
   */
  on<K extends JobEventName>(
    name: K,
    listener: JobListener<K>,
    options?: ListenerOptions,
  ): () => void {
    return this.events.on(name, listener, options);
  }

  async run(options: RunOptions = {}): Promise<RunSummary> {
    const counters = { results: 0, duplicates: 0, restarts: 0 };
    const { logger } = this.config;
    let delay = this.config.retryDelayMs;
    let failure: unknown;
    // The operator's skip request, read when a message it may cover stopped the job (see
    // `coveringSkipRequest`), and applied by every start of this run from then on.
    let skipRequest: bigint | undefined;
    // A function, not a narrowed property: the signal may abort during any await below.
    const aborted = (): boolean => options.signal?.aborted === true;
    try {
      for (;;) {
        if (aborted()) return counters; // stopped before the start, or during the backoff
        try {
          await this.runFromResumePoint(options, counters, skipRequest);
          return counters;
        } catch (error) {
          if (error instanceof ProcessingError && error.skippable && !aborted()) {
            const request = await this.coveringSkipRequest(error);
            if (request !== undefined) {
              skipRequest = request;
              continue; // from the resume point, so the step open before the message is whole
            }
          }
          if (error instanceof SourceDeactivatedError) {
            // Another instance took over: the confirms landed and the source answered (see
            // runFromResumePoint). Waiting to be activated again is no failure and no restart.
            if (aborted()) return counters;
            this.reportDeactivated(error);
            continue;
          }
          // Only the library's own errors are retriable; the instanceof types the event.
          if (!(error instanceof StreamWindowsError) || !isRetriable(error) || aborted()) {
            throw error;
          }
          counters.restarts++;
          this.events.emit('restart', { error, delayMs: delay, restarts: counters.restarts });
          logger.warn(
            { ...this.where(), err: error, delayMs: delay, restarts: counters.restarts },
            `resuming from the broker in ${delay} ms after a retriable error`,
          );
          await sleep(delay, options.signal);
          delay = Math.min(delay * 2, this.config.maxRetryDelayMs);
        }
      }
    } catch (error) {
      failure = error;
      if (error instanceof ProcessingError && this.config.processor.onError === 'stop') {
        await this.recordStop(error);
      }
      throw error;
    } finally {
      this.events.emit('stopped', { summary: { ...counters }, error: failure });
      if (failure === undefined) logger.info({ ...this.where(), ...counters }, 'job stopped');
      else logger.error({ ...this.where(), ...counters, err: failure }, 'job stopped on an error');
    }
  }

  private async runFromResumePoint(
    options: RunOptions,
    counters: { results: number; duplicates: number; restarts: number },
    skipRequest: bigint | undefined,
  ): Promise<void> {
    const { target } = this.config;
    // Aborted during an await below: an abort listener added then would never fire, so the
    // reader is handed a signal that already knows.
    const reading = new AbortController();
    const signal =
      options.signal === undefined
        ? reading.signal
        : AbortSignal.any([options.signal, reading.signal]);
    // The end when the job (re)started: `untilCaughtUp` stops there.
    const sourceEnd = await this.sourceEnd(options);
    if (signal.aborted) return;
    // The resume point is read when the source may deliver (for a single active consumer, at
    // its activation, maybe long after this start), so that what another instance published
    // until then is where this one goes on. Everything below uses the `found` read then.
    let found: FoundStart | undefined;
    let caughtUp = false;
    let stopAtStart = false;
    const processor = this.createProcessor();
    // Whether the producer ever published: a scan of the whole target on RabbitMQ, so asked at
    // most once per start, by the first read that needs it (all of them before this start
    // publishes anything, so one answer serves them all).
    let publishedScan: Promise<boolean> | undefined;
    const hasPublished = (): Promise<boolean> => (publishedScan ??= target.hasPublished());
    const resumePoint = async (): Promise<bigint | 'first'> => {
      found = await this.resumePoint.read(processor, hasPublished);
      const { last, from } = found;
      // A last id of 0 counts as published when the job found its result under it.
      const published = last > 0n || found.published === true;
      if (this.config.processor.onError === 'stop') {
        processor.skipThrough(skipsThrough(skipRequest, last, published));
      }
      this.reportStarted(last, from, sourceEnd, counters.restarts);
      // Nothing to read up to the end known at the start: caught up before the first chunk.
      caughtUp =
        sourceEnd !== undefined && (sourceEnd === 0n || (published && last + 1n >= sourceEnd));
      if (caughtUp) this.reportCaughtUp(sourceEnd ?? 0n);
      if (caughtUp && options.untilCaughtUp === true) {
        stopAtStart = true;
        reading.abort();
      }
      return from;
    };
    // An empty source is caught up whatever the resume point: it is not even read.
    if (sourceEnd === 0n && options.untilCaughtUp === true) {
      await resumePoint();
      return;
    }

    const publisher = new OrderedPublisher(target, this.config.maxInFlight);
    this.publisher = publisher;
    // Reading from last + 1, only a result for offset 0 can be one the broker already has,
    // and only when the last id is 0: then it is a duplicate if the producer did publish.
    // Asked once, before that publish (after it, the answer would be yes either way).
    let zeroWasStored: Promise<boolean> | undefined;
    const countResult = (): void => void counters.results++;
    const countDuplicate = (): void => void counters.duplicates++;
    const zeroStored = (): Promise<boolean> =>
      (zeroWasStored ??=
        found?.published === undefined ? hasPublished() : Promise.resolve(found.published));
    // `idleFlushMayFollow`: a result an idle flush would join stays behind (see below).
    const publishReady = async (readAt: number, idleFlushMayFollow = false): Promise<void> => {
      const observed = this.events.has('published');
      for (const result of processor.takeReady(idleFlushMayFollow)) {
        const id = result.lastOffset;
        const duplicate = id === 0n && (found?.last ?? 0n) === 0n && (await zeroStored());
        const count = duplicate ? countDuplicate : countResult;
        // Counted on the confirm: a publish lost with its connection is published again.
        await publisher.publish(
          id,
          this.encode(result),
          observed ? this.confirmObserved(result, duplicate, readAt, count) : count,
          this.routingKey(result),
        );
      }
    };
    const { idleMs } = this.config.flush;
    // The read under way, kept across an idle flush: the chunk it brings is the next one.
    let pending: Promise<IteratorResult<SourceChunk, void>> | undefined;
    const chunks = this.readFromResumePoint(resumePoint, () => found, hasPublished, signal);
    try {
      for (;;) {
        pending ??= chunks.next();
        // While writes are under way, a failed one ends the wait: nothing else may come to
        // notice it (the source may stay quiet), and the job must resume at once.
        const read = publisher.idle ? pending : publisher.unlessFailed(pending);
        // The idle timer runs only here, between results' publishes, never during one: a
        // flush is published in the loop like any result, so nothing is reordered.
        const next =
          idleMs !== undefined && processor.canFlush ? await orIdle(read, idleMs) : await read;
        if (next === IDLE) {
          if (signal.aborted) break; // stopped while the timer ran: nothing more is decided
          processor.flush();
          await publishReady(performance.now());
          continue;
        }
        pending = undefined;
        if (next === undefined) await publisher.drain(); // throws the failure
        if (next === undefined || next.done === true || stopAtStart) break;
        const chunk = next.value;
        // Read once per chunk: with nobody listening, observing costs no more than this.
        const readAt = this.events.has('published') ? performance.now() : 0;
        if (this.events.has('read')) {
          this.events.emit('read', {
            firstOffset: chunk.firstOffset,
            messages: chunk.count,
            timestamp: chunk.timestamp,
          });
        }
        let failure: { error: unknown } | undefined;
        try {
          processor.process(chunk);
        } catch (error) {
          failure = { error };
        }
        const reachedEnd =
          failure === undefined &&
          !caughtUp &&
          sourceEnd !== undefined &&
          chunk.firstOffset + BigInt(chunk.count) >= sourceEnd;
        // Flushed before the chunk's results go out: a result decided at the last message read
        // takes the flushed windows too (a flush after it would have no new id to go under).
        if (reachedEnd && options.untilCaughtUp === true && this.config.flush.caughtUp) {
          processor.flush();
        }
        // With an idle flush, a result decided at the chunk's last message may wait (until the
        // next chunk, or the flush it then joins): a flush after it could go under no new id.
        const idleFlushMayFollow =
          idleMs !== undefined &&
          failure === undefined &&
          !(reachedEnd && options.untilCaughtUp === true);
        // Steps that ended before a failing message are complete: publish them first.
        await publishReady(readAt, idleFlushMayFollow);
        if (failure !== undefined) throw failure.error;
        if (reachedEnd) {
          caughtUp = true;
          this.reportCaughtUp(sourceEnd);
          if (options.untilCaughtUp === true) break;
        }
      }
      await publishReady(performance.now()); // a result held for an idle flush that did not come
      await publisher.drain();
    } catch (error) {
      if (error instanceof SourceDeactivatedError) {
        this.reportStepDown(error, publisher.unconfirmed);
      }
      // Whatever stopped us, let the confirms already under way land before reporting.
      await publisher.drain().catch(() => undefined);
      throw error;
    } finally {
      // In this order whatever ended the loop: the confirms landed (above), then the read is
      // aborted, and only then is the source left. A single active source answers a
      // step-down on that abort, so the next instance's resume point sees every result.
      reading.abort();
      // A read left waiting by a failure during an idle flush: its end must not go unhandled.
      pending?.catch(() => undefined);
      await chunks.return(undefined).catch(() => undefined);
    }
  }

  /**
   * The operator's skip request for this job (./skip-request.ts) when it covers the message
   * that stopped it: read only then, so that a start asks the source nothing more. A failed
   * read counts as no request (the job stops as it would have without one), with a warning.
   */
  private async coveringSkipRequest(error: ProcessingError): Promise<bigint | undefined> {
    const { source, target, logger } = this.config;
    if (source.storedOffset === undefined || !this.skipSupported) return undefined;
    let request: bigint | undefined;
    try {
      request = await source.storedOffset(skipReference(target.stream, target.producer));
    } catch (cause) {
      logger.warn(
        { ...this.where(), offset: String(error.offset), err: cause },
        'the skip request could not be read: the job stops at the message as without one',
      );
      return undefined;
    }
    if (request === undefined || request < error.offset) return undefined;
    logger.info(
      { ...this.where(), offset: String(error.offset), skipRequested: String(request) },
      'resuming to step over the message as the operator asked (stream-windows skip)',
    );
    return request;
  }

  /**
   * Records on the source where a message stopped the job under 'stop', for `stream-windows
   * status` and `skip`, and says how to step over it. Only a stop the error says is skippable
   * is recorded (so `skip` refuses any other), and none of a job writing to a super stream:
   * `skip` names one target stream. Best effort: the stop itself is what the caller gets.
   */
  private async recordStop(error: ProcessingError): Promise<void> {
    const { source, target, logger } = this.config;
    const where = { ...this.where(), offset: String(error.offset), stage: error.stage };
    if (!error.skippable) {
      logger.error(
        where,
        `a ${error.stage} failure stopped the job at offset ${error.offset}: it depends on more ` +
          `than the message alone (the job's state, its whole step or its setup), so it cannot be skipped; fix the job`,
      );
      return;
    }
    if (!this.skipSupported) {
      logger.error(
        where,
        `message ${error.offset} of '${source.stream}' stopped the job (${error.stage}); ` +
          `'stream-windows skip' does not step over a message for a job writing to a super stream`,
      );
      return;
    }
    try {
      await source.storeOffset?.(stopReference(target.stream, target.producer), error.offset);
    } catch (cause) {
      logger.warn({ ...where, err: cause }, 'the offset that stopped the job was not recorded');
    }
    logger.error(
      where,
      `message ${error.offset} of '${source.stream}' stopped the job (${error.stage}); once it ` +
        `is known to be bad input, 'stream-windows skip --source ${source.stream} --target ` +
        `${target.stream} --producer ${target.producer} --offset ${error.offset}' lets the ` +
        `next start dead-letter it`,
    );
  }

  /** `stream-windows skip` names one target stream: a super stream's job has none. */
  private get skipSupported(): boolean {
    return this.config.route === undefined;
  }

  private createProcessor(): Processor<R> {
    const { caughtUp, idleMs, resultFormat } = this.config.flush;
    const flushes = caughtUp || idleMs !== undefined;
    return createProcessor(this.config.processor, { flushes, resultFormat });
  }

  /**
   * The source's end at the start: needed to stop `untilCaughtUp`, and asked as well when
   * someone waits for `caughtUp` — then a failure to answer costs only that event.
   */
  private async sourceEnd(options: RunOptions): Promise<bigint | undefined> {
    if (options.untilCaughtUp === true) return this.config.source.endOffset();
    if (!this.events.has('caughtUp')) return undefined;
    try {
      return await this.config.source.endOffset();
    } catch (error) {
      this.config.logger.warn(
        { ...this.where(), err: error },
        "the source's end offset could not be read: no caughtUp event in this start",
      );
      return undefined;
    }
  }

  private reportStarted(
    last: bigint,
    from: bigint | 'first',
    sourceEnd: bigint | undefined,
    restarts: number,
  ): void {
    this.events.emit('started', { lastPublishingId: last, from, sourceEnd, restarts });
    this.config.logger.info(
      {
        ...this.where(),
        lastPublishingId: String(last),
        from: String(from),
        sourceEnd: sourceEnd === undefined ? undefined : String(sourceEnd),
      },
      "job started from the broker's last publishing id",
    );
  }

  private reportStandby(group: string): void {
    const { stream } = this.config.source;
    this.events.emit('standby', { stream, group });
    this.config.logger.info(
      { ...this.where(), group },
      'standing by in the consumer group until the broker activates this instance',
    );
  }

  private reportStepDown(error: SourceDeactivatedError, inFlight: number): void {
    const { stream, group, offset: nextOffset } = error;
    this.events.emit('stepDown', { stream, group, nextOffset, inFlight });
    this.config.logger.info(
      {
        ...this.where(),
        group,
        nextOffset: nextOffset === undefined ? undefined : String(nextOffset),
        inFlight,
      },
      'told to step down; answering once the results in flight are confirmed',
    );
  }

  private reportDeactivated(error: SourceDeactivatedError): void {
    this.events.emit('deactivated', { stream: error.stream, nextOffset: error.offset });
    this.config.logger.info(
      {
        ...this.where(),
        nextOffset: error.offset === undefined ? undefined : String(error.offset),
      },
      'another instance took over the source; waiting to be activated again',
    );
  }

  private reportCaughtUp(offset: bigint): void {
    this.events.emit('caughtUp', { offset });
    this.config.logger.info({ ...this.where(), offset: String(offset) }, 'job caught up');
  }

  /** The confirm callback of one result, when someone listens for `published`. */
  private confirmObserved(
    result: StepResult<R>,
    duplicate: boolean,
    readAt: number,
    count: () => void,
  ): () => void {
    return () => {
      count();
      this.events.emit('published', {
        firstOffset: result.firstOffset,
        lastOffset: result.lastOffset,
        messages: result.messages,
        outputs: result.outputs.length,
        late: result.late.length,
        lateDropped: result.lateDropped,
        filtered: result.filtered,
        deadLetters: result.deadLetters.length,
        duplicate,
        windowEnd: result.window?.end ?? null,
        processingMs: performance.now() - readAt,
      });
    };
  }

  /** The fields every log line of this job carries. */
  private where(): { source: string; target: string; producer: string } {
    return {
      source: this.config.source.stream,
      target: this.config.target.stream,
      producer: this.config.target.producer,
    };
  }

  /**
   * The source from the broker's resume point, read when the source asks (`resumePoint`), and
   * from 1 instead when retention removed the source's head (rule 7 of
   * ./resume/resume-point.ts).
   */
  private async *readFromResumePoint(
    resumePoint: () => Promise<bigint | 'first'>,
    found: () => FoundStart | undefined,
    hasPublished: () => Promise<boolean>,
    signal: AbortSignal,
  ): AsyncGenerator<SourceChunk, void, undefined> {
    const { source } = this.config;
    const group: GroupObserver = { standby: (name) => this.reportStandby(name) };
    let checked = false;
    let resumeAtOne = false;
    for await (const chunk of source.read(resumePoint, signal, group)) {
      if (!checked) {
        checked = true;
        // The source asked the resume point before delivering anything.
        const start = found();
        resumeAtOne =
          start !== undefined && (await resumesAtOne(start, chunk.firstOffset, hasPublished));
        if (resumeAtOne) break;
      }
      yield chunk;
    }
    if (resumeAtOne) yield* source.read(1n, signal, group);
  }

  private routingKey(result: StepResult<R>): string | undefined {
    const { route } = this.config;
    if (route === undefined) return undefined;
    let key: unknown;
    try {
      key = route(result);
    } catch (cause) {
      throw new ProcessingError(this.config.source.stream, result.lastOffset, 'route', cause);
    }
    if (typeof key !== 'string') {
      const cause = new TypeError(`route must return a string, returned ${typeof key}`);
      throw new ProcessingError(this.config.source.stream, result.lastOffset, 'route', cause);
    }
    return key;
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
        result.recovery?.openCounts?.length ?? 0,
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
