import type { RunOptions, RunSummary } from '../api/run-options.js';
import {
  DefinitionChangeRefusedError,
  isRetriable,
  JobDefinitionError,
  OutputTooLargeError,
  ProcessingError,
  ProducerRenamedError,
  RecoveryError,
  SourceDeactivatedError,
  StreamWindowsError,
} from '../common/errors.js';
import { CodecError } from '../codecs/codec-error.js';
import { isEventTimeSpec } from '../windows/event-time-spec.js';
import type { Logger } from '../common/logger.js';
import {
  JobEvents,
  type JobEventName,
  type JobListener,
  type ListenerOptions,
} from '../api/job-events.js';
import { OrderedPublisher } from './ordered-publisher.js';
import type { GroupObserver, Source, SourceChunk, Target } from '../ports/ports.js';
import { refusedChange } from '../api/job-definition.js';
import { decodeResultHeader, type ResultHeader } from '../result-format/result-format.js';
import { StepProcessor, type StepProcessorConfig } from './step-processor.js';
import type { RecoveryState, StepResult } from '../result-format/step-result.js';
import { WindowOperator, type WindowOperatorConfig } from './window-operator.js';
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
  /** A step processor's, or for event-time windows (the spec tells) a window operator's. */
  readonly processor: StepProcessorConfig<T, A, R> | WindowOperatorConfig<T, A, R>;
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
  readonly definition: { readonly current: string; readonly allowChange: boolean } | undefined;
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
     * A step job flushing into the library's result format: a resume reads the producer's
     * last result, to reopen the window a flush left open (see `resumeAfterFlush`).
     */
    readonly readsLastResult: boolean;
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
  /** Whether this loop told that its target cannot answer for its former producer name. */
  private renameUncheckedLogged = false;

  constructor(private readonly config: RunnerConfig<T, A, R>) {
    this.events = new JobEvents((name, error) =>
      config.logger.error(
        { ...this.where(), event: name, err: error },
        `a listener of '${name}' threw; the job goes on`,
      ),
    );
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
    // until then is where this one goes on. Everything below uses the `last` read then.
    let last = 0n;
    let caughtUp = false;
    let stopAtStart = false;
    const processor = this.createProcessor();
    // Event-time windows resume where their last result says (its windows still open then
    // began earlier); known at the resume point whether the producer ever published.
    let recovered: boolean | undefined;
    // Whether the producer ever published: a scan of the whole target on RabbitMQ, so asked at
    // most once per start, by the first read that needs it (all of them before this start
    // publishes anything, so one answer serves them all).
    let publishedScan: Promise<boolean> | undefined;
    const hasPublished = (): Promise<boolean> => (publishedScan ??= target.hasPublished());
    const resumePoint = async (): Promise<bigint | 'first'> => {
      let from: bigint | 'first';
      ({ last, from, recovered } = await this.readStart(processor, hasPublished));
      // A last id of 0 counts as published when the job found its result under it.
      const published = last > 0n || recovered === true;
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
      (zeroWasStored ??= recovered === undefined ? hasPublished() : Promise.resolve(recovered));
    // `holdLast`: the last result stays in `ready`, for an idle flush to join (see below).
    const publishReady = async (readAt: number, holdLast = false): Promise<void> => {
      const observed = this.events.has('published');
      const { ready } = processor;
      const count = holdLast ? ready.length - 1 : ready.length;
      for (let i = 0; i < count; i++) {
        const result = ready[i] as StepResult<R>;
        const id = result.lastOffset;
        const duplicate = id === 0n && last === 0n && (await zeroStored());
        const count = duplicate ? countDuplicate : countResult;
        // Counted on the confirm: a publish lost with its connection is published again.
        await publisher.publish(
          id,
          this.encode(result),
          observed ? this.confirmObserved(result, duplicate, readAt, count) : count,
          this.routingKey(result),
        );
      }
      ready.splice(0, count);
    };
    const { idleMs } = this.config.flush;
    // The read under way, kept across an idle flush: the chunk it brings is the next one.
    let pending: Promise<IteratorResult<SourceChunk, void>> | undefined;
    const chunks = this.readFromResumePoint(resumePoint, () => last, hasPublished, signal);
    try {
      for (;;) {
        pending ??= chunks.next();
        // While writes are under way, a failed one ends the wait: nothing else may come to
        // notice it (the source may stay quiet), and the job must resume at once.
        const read = publisher.idle ? pending : publisher.unlessFailed(pending);
        // The idle timer runs only here, between results' publishes, never during one: a
        // flush is published in the loop like any result, so nothing is reordered.
        const flushable = processor.canFlush || processor.ready.length > 0;
        const next = idleMs !== undefined && flushable ? await orIdle(read, idleMs) : await read;
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
        // With an idle flush, a result decided at the chunk's last message waits (until the
        // next chunk, or the flush it then joins): a flush after it could go under no new id.
        const hold =
          idleMs !== undefined &&
          failure === undefined &&
          !(reachedEnd && options.untilCaughtUp === true) &&
          processor.holdsDecision;
        // Steps that ended before a failing message are complete: publish them first.
        await publishReady(readAt, hold);
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
   * What the broker tells a start, read in this order: the producer's last publishing id
   * `last`; when 0, whether the producer was renamed (`checkNotRenamed`); its last result with
   * its definition checked (`startingResult`); then where the processor resumes: an event-time
   * job from its result's recovery state, a flushing step job past its flushed window
   * (`resumeAfterFlush`), any other from `last` + 1 ('first' for 0). `recovered`: whether the
   * producer ever published, when one of those found out (undefined when none asked).
   */
  private async readStart(
    processor: StepProcessor<T, A, R> | WindowOperator<T, A, R>,
    hasPublished: () => Promise<boolean>,
  ): Promise<{ last: bigint; from: bigint | 'first'; recovered: boolean | undefined }> {
    const last = await this.config.target.lastPublishingId();
    if (last === 0n) await this.checkNotRenamed(hasPublished);
    const lastResult = await this.startingResult(processor, last);
    const from: bigint | 'first' = last > 0n ? last + 1n : 'first';
    if (processor instanceof WindowOperator) {
      const state = this.recoveryState(last, lastResult);
      if (state === undefined) return { last, from, recovered: false };
      processor.restore(state, last);
      return { last, from: state.offset, recovered: true };
    }
    const { flush } = this.config;
    if (flush.caughtUp || flush.idleMs !== undefined) {
      const resumed = await this.resumeAfterFlush(processor, last, lastResult, hasPublished);
      return { last, from: resumed.from, recovered: resumed.published };
    }
    return { last, from, recovered: undefined };
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

  private createProcessor(): StepProcessor<T, A, R> | WindowOperator<T, A, R> {
    const config = this.config.processor;
    return isOperatorConfig(config) ? new WindowOperator(config) : new StepProcessor(config);
  }

  /**
   * The producer's result under publishing id `last`, when this start needs it (undefined
   * when not), its definition checked: one read and one decode for everything a start does
   * with it. Event-time windows restore their state from it and a flushing step job reopens
   * its flushed window, whatever the last id; any job writing the result format checks whose
   * result it is, when the producer published (a last id of 0 is not checked: it costs a read
   * of the whole target when the producer never published, the common case).
   */
  private async startingResult(
    processor: StepProcessor<T, A, R> | WindowOperator<T, A, R>,
    last: bigint,
  ): Promise<LastResult | undefined> {
    const { flush, definition } = this.config;
    const flushes = flush.caughtUp || flush.idleMs !== undefined;
    const needed =
      processor instanceof WindowOperator ||
      (flushes && flush.readsLastResult) ||
      (definition !== undefined && last > 0n);
    if (!needed) return undefined;
    const bytes = await this.config.target.readResult(last);
    if (bytes === undefined) return { kind: 'missing' };
    let header: ResultHeader;
    try {
      header = decodeResultHeader(bytes);
    } catch (cause) {
      if (!(cause instanceof CodecError)) throw cause;
      return { kind: 'unreadable', reason: cause.message };
    }
    this.checkDefinition(header.definition, last);
    return { kind: 'read', header };
  }

  /**
   * One job definition per producer name: a last result written by another definition stops
   * the job before it publishes anything, unless the change was asked for. A result without
   * one (written by an earlier version, or by `encodeResult` without it) is accepted.
   */
  private checkDefinition(found: string | undefined, last: bigint): void {
    const { definition, target, logger } = this.config;
    if (definition === undefined || found === undefined || found === definition.current) return;
    if (!definition.allowChange) {
      throw new JobDefinitionError(target.stream, target.producer, last, found, definition.current);
    }
    const refused = refusedChange(found, definition.current);
    if (refused !== undefined) {
      const { stream, producer } = target;
      throw new DefinitionChangeRefusedError(
        stream,
        producer,
        last,
        found,
        definition.current,
        refused,
      );
    }
    logger.warn(
      { ...this.where(), lastPublishingId: String(last), found, definition: definition.current },
      "the producer's last result was written by another job definition: going on from it with this one (allowDefinitionChange)",
    );
  }

  /**
   * Asked when the producer's last id is 0: if its former name published on the target, the
   * job was upgraded from that name, and starting would read the source again from its first
   * offset and publish every result a second time. One query; a scan only when the former
   * name did publish (whether this producer's 0 is "never" or "offset 0"). A former name whose
   * only result is offset 0's answers 0 too and is not caught: at most that one result twice.
   */
  private async checkNotRenamed(hasPublished: () => Promise<boolean>): Promise<void> {
    const { formerProducer, target, logger } = this.config;
    if (formerProducer === undefined) return;
    if (target.lastPublishingIdOf === undefined) {
      // A wrapper that does not forward it turns the check off: say so, once per loop.
      if (!this.renameUncheckedLogged) {
        this.renameUncheckedLogged = true;
        logger.warn(
          { ...this.where(), formerProducer },
          `the target has no lastPublishingIdOf, so whether the former producer name '${formerProducer}' published is not checked: if it did, this job reads its source again from the first offset and publishes every result a second time`,
        );
      }
      return;
    }
    const formerLast = await target.lastPublishingIdOf(formerProducer);
    if (formerLast === 0n || (await hasPublished())) return;
    throw new ProducerRenamedError(target.stream, target.producer, formerProducer, formerLast);
  }

  /**
   * The recovery state of the producer's result under publishing id `last`: undefined when the
   * producer never published (a last id of 0 and no result under it). A result that should be
   * there and is not, or carries no recovery state, stops the job (RecoveryError).
   */
  private recoveryState(last: bigint, result: LastResult | undefined): RecoveryState | undefined {
    const { target } = this.config;
    const fail = (reason: string): RecoveryError =>
      new RecoveryError(target.stream, target.producer, last, reason);
    // Always read for event-time windows (see startingResult).
    if (result === undefined || result.kind === 'missing') {
      if (last === 0n) return undefined;
      throw fail(
        'the target holds no result of it under that id (removed by retention, or the name was used by another job)',
      );
    }
    if (result.kind === 'unreadable') throw fail(`its result cannot be read: ${result.reason}`);
    const { recovery } = result.header;
    if (recovery === undefined) {
      throw fail(
        'its result carries no recovery state (written by a job without event-time windows)',
      );
    }
    return recovery;
  }

  /**
   * Where a step job that flushes resumes, and the window it goes on with. A flush ends a
   * step before its window: the producer's last result may be such a step, and its window
   * (the bounds it carries) is reopened, so that the next step tells whether it continues
   * it. A missing or unreadable result costs only that mark (every message is in one result
   * either way), so it is a warning. And a flushed step of offset 0 alone is no step a read
   * from 'first' makes again: the job resumes at 1 whenever the producer published.
   */
  private async resumeAfterFlush(
    processor: StepProcessor<T, A, R>,
    last: bigint,
    lastResult: LastResult | undefined,
    hasPublished: () => Promise<boolean>,
  ): Promise<{ from: bigint | 'first'; published: boolean | undefined }> {
    const { processor: config } = this.config;
    // Read for the definition check too; only a window with event-time bounds reopens.
    const result = this.config.flush.readsLastResult ? lastResult : undefined;
    let unread: string | undefined;
    if (result?.kind === 'read') {
      const { header } = result;
      const { windowStart: start, windowEnd: end } = header;
      // Written by another window (the job changed): nothing of it goes on.
      const sameWindow = header.window === config.window.describe();
      if (header.flushed && sameWindow && start !== undefined && end !== undefined) {
        processor.reopenFlushed({ start, end });
      }
    } else if (result?.kind === 'unreadable') {
      unread = `cannot be read (${result.reason})`;
    } else if (result?.kind === 'missing' && last > 0n) {
      unread = 'is not in the target (removed by retention, or the name was used by another job)';
    }
    if (unread !== undefined) {
      this.config.logger.warn(
        { ...this.where(), lastPublishingId: String(last) },
        `the producer's last result ${unread}: a window it flushed is not reopened, so the next step is not marked as continuing it`,
      );
    }
    if (last > 0n) return { from: last + 1n, published: undefined };
    // A result under id 0, readable or not, is one the producer published.
    const published = (result !== undefined && result.kind !== 'missing') || (await hasPublished());
    return { from: published ? 1n : 'first', published };
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
   * The source from the broker's resume point, read when the source asks (`resumePoint`):
   * `last + 1`. A last publishing id of 0 means "never published" or "published offset 0", so
   * the job reads from 'first'. The two part only when retention removed the source's head:
   * if the first offset delivered is above 1 and the producer did publish (offset 0), the job
   * must resume at 1, so the source is read from there instead and reports the removed
   * offsets rather than skip them.
   */
  private async *readFromResumePoint(
    resumePoint: () => Promise<bigint | 'first'>,
    last: () => bigint,
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
        // Only a read from 'first' (a last id of 0) can start past a head retention removed.
        // An event-time job reads from where its last result says, never from 'first' after one.
        resumeAtOne =
          !isEventTimeSpec(this.config.processor.window) &&
          last() === 0n &&
          chunk.firstOffset > 1n &&
          (await hasPublished());
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

function isOperatorConfig<T, A, R>(
  config: StepProcessorConfig<T, A, R> | WindowOperatorConfig<T, A, R>,
): config is WindowOperatorConfig<T, A, R> {
  return isEventTimeSpec(config.window);
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

/** The producer's last result as a restart finds it. */
type LastResult =
  | { readonly kind: 'read'; readonly header: ResultHeader }
  | { readonly kind: 'missing' }
  | { readonly kind: 'unreadable'; readonly reason: string };
