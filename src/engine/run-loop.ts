import type { RunOptions, RunSummary } from '../api/run-options.js';
import { OutputTooLargeError, ProcessingError, SourceDeactivatedError } from '../common/errors.js';
import type { JobEvents } from '../api/job-events.js';
import type { GroupObserver, Source, SourceChunk } from '../ports/ports.js';
import type { StepResult } from '../result-format/step-result.js';
import { writeSize } from '../ports/write-size.js';
import { lastWriteId, MAX_STEP_WRITES, writeId } from '../result-format/publishing-id.js';
import { heldBy } from '../result-format/result-decoder.js';
import { IDLE, orIdle } from '../ports/idle-timeout.js';
import { nextTurn } from '../common/waits.js';
import { OrderedPublisher } from './ordered-publisher.js';
import { TurnWatch } from './turn-watch.js';
import { sliceOf } from '../ports/chunk-slice.js';
import { createProcessor } from './processor-factory.js';
import type { Processor } from './processor.js';
import { skipsThrough } from './skip-request.js';
import { publishedThrough } from './resume/published-through.js';
import {
  isStoredStepZero,
  resumesAtOne,
  stepZeroStored,
  type FoundStart,
  type ResumePoint,
} from './resume/resume-point.js';
import type { RunnerConfig } from './runner.js';
import { MergedInputs, positionAfter } from './merge/merged-inputs.js';
import { readInputs, type InputDelivery } from './merge/read-inputs.js';

/** What the loop reads: a chunk of its source, or over several inputs what their reads deliver. */
type Delivery = SourceChunk | InputDelivery;

/** What a run loop needs of its job (the Runner), which outlives every start. */
export interface LoopJob<T, A, R> {
  readonly config: RunnerConfig<T, A, R>;
  readonly events: JobEvents;
  readonly resumePoint: ResumePoint;
  /** The fields every log line of this job carries. */
  where(): { source: string; target: string; producer: string };
  /** Told the publisher of this start once it publishes, for the job's `inFlight`. */
  publishing(publisher: OrderedPublisher): void;
  /** Told of progress, a result confirmed (not a catch-up: its publish may fail): it ends a run of retries. */
  progressed(): void;
}

/**
 * The most messages the loop processes before it publishes what they decided: a chunk of
 * RabbitMQ's may hold 16,000 (a producer's pipelined writes stored together), ~20 ms of work,
 * and a result decided at its first message would wait for all of it. 1,000 messages are
 * ~1.3 ms of work; a slice costs a call and a look at the ready results.
 */
const SLICE_MESSAGES = 1_000;

/** The job's counts, kept across its starts. */
type Counters = { -readonly [K in keyof RunSummary]: RunSummary[K] };

/**
 * One start of the read-process-write loop: from the resume point (./resume/resume-point.ts),
 * read when the source may deliver, until the job stops, catches up (`untilCaughtUp`) or fails.
 * Each (re)start is a new RunLoop with a fresh processor: whatever was not confirmed is
 * computed again, and the broker discards what it already has.
 */
export class RunLoop<T, A, R> {
  // Aborted during an await below: an abort listener added then would never fire, so the
  // reader is handed a signal that already knows.
  private readonly reading = new AbortController();
  private readonly signal: AbortSignal;
  private readonly processor: Processor<R>;
  private readonly publisher: OrderedPublisher;
  private readonly turns = new TurnWatch();
  /** The end when the job (re)started: `untilCaughtUp` stops there. */
  private sourceEnd: bigint | undefined;
  /**
   * Over several inputs, each one's end when the job (re)started (their sum is `sourceEnd`),
   * and the offset after the last message delivered of each: caught up when each reached its end.
   */
  private inputEnds: readonly bigint[] | undefined;
  private readonly inputsNext: bigint[] = [];
  /**
   * The resume point is read when the source may deliver (for a single active consumer, at
   * its activation, maybe long after this start), so that what another instance published
   * until then is where this one goes on. Everything uses the `found` read then.
   */
  private found: FoundStart | undefined;
  private caughtUp = false;
  private stopAtStart = false;
  /**
   * Whether the producer ever published: a scan of the whole target on RabbitMQ, so asked at
   * most once per start, by the first read that needs it (all of them before this start
   * publishes anything, so one answer serves them all).
   */
  private publishedScan: Promise<boolean> | undefined;
  /**
   * Reading from last + 1, only a result for offset 0 can be one the broker already has,
   * and only when no step is stored: then, on a target an earlier version wrote, it is a
   * duplicate if the producer did publish. Asked once, before that publish.
   */
  private zeroWasStored: Promise<boolean> | undefined;
  /** The publishing id of the producer's last step (`sw-previous` of a step of several writes). */
  private previousId = 0n;
  /** The read under way, kept across an idle flush: the chunk it brings is the next one. */
  private pending: Promise<IteratorResult<Delivery, void>> | undefined;
  private readonly countResult = (): void => {
    this.counters.results++;
    this.job.progressed();
  };
  private readonly countDuplicate = (): void => {
    this.counters.duplicates++;
    this.job.progressed();
  };

  constructor(
    private readonly job: LoopJob<T, A, R>,
    private readonly options: RunOptions,
    private readonly counters: Counters,
    /** The operator's skip request this run applies (see Runner.run). */
    private readonly skipRequest: bigint | undefined,
  ) {
    const { signal } = options;
    this.signal =
      signal === undefined ? this.reading.signal : AbortSignal.any([signal, this.reading.signal]);
    const { config } = job;
    const { caughtUp, idleMs, resultFormat } = config.flush;
    const flushes = caughtUp || idleMs !== undefined;
    this.processor = createProcessor(config.processor, { flushes, resultFormat });
    this.publisher = new OrderedPublisher(config.target, config.maxInFlight);
  }

  async run(): Promise<void> {
    const { options, processor, publisher, signal } = this;
    this.sourceEnd = await this.readSourceEnd();
    if (signal.aborted) return;
    // An empty source is caught up whatever the resume point: it is not even read.
    if (this.sourceEnd === 0n && options.untilCaughtUp === true) {
      await this.resumePoint();
      return;
    }
    this.job.publishing(publisher);
    const { idleMs } = this.job.config.flush;
    const { source } = this.job.config;
    const chunks =
      source instanceof MergedInputs ? this.readMerged(source) : this.readFromResumePoint();
    try {
      for (;;) {
        this.pending ??= chunks.next();
        // While writes are under way, a failed one ends the wait: nothing else may come to
        // notice it (the source may stay quiet), and the job must resume at once.
        const read = publisher.idle ? this.pending : publisher.unlessFailed(this.pending);
        // The idle timer runs only here, between results' publishes, never during one: a
        // flush is published in the loop like any result, so nothing is reordered.
        const next =
          idleMs !== undefined && processor.canFlush ? await orIdle(read, idleMs) : await read;
        if (next === IDLE) {
          // TypeScript keeps the narrowing from before the awaits above, which may have aborted it.
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
          if (signal.aborted) break; // stopped while the timer ran: nothing more is decided
          processor.flush();
          await this.publishReady(performance.now());
          continue;
        }
        this.pending = undefined;
        if (next === undefined) await publisher.drain(); // throws the failure
        if (next === undefined || next.done === true || this.stopAtStart) break;
        this.turns.busy();
        if (await this.step(next.value)) break;
        // Writes leave and confirms come in at a turn's end, not while chunks queue up.
        if (this.turns.held) await nextTurn();
      }
      await this.publishReady(performance.now()); // a result held for an idle flush that did not come
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
      this.reading.abort();
      // A read left waiting by a failure during an idle flush: its end must not go unhandled.
      this.pending?.catch(() => undefined);
      await chunks.return(undefined).catch(() => undefined);
    }
  }

  /** Processes one delivery and publishes what it decided; true when the loop stops there. */
  private async step(delivery: Delivery): Promise<boolean> {
    const { events, config } = this.job;
    const { options, processor, sourceEnd } = this;
    const input = 'input' in delivery ? delivery : undefined;
    const chunk = input === undefined ? (delivery as SourceChunk) : input.chunk;
    // Read once per chunk: with nobody listening, observing costs no more than this.
    const readAt = events.has('published') ? performance.now() : 0;
    if (chunk !== undefined && events.has('read')) {
      events.emit('read', {
        firstOffset: chunk.firstOffset,
        messages: chunk.count,
        timestamp: chunk.timestamp,
        ...(input === undefined ? {} : { stream: this.inputStream(input.input) }),
      });
    }
    const failure =
      chunk === undefined
        ? this.leaveOutCaught((input as InputDelivery).input)
        : await this.processInSlices(chunk, readAt, input?.input);
    const reachedEnd =
      failure === undefined &&
      !this.caughtUp &&
      chunk !== undefined &&
      (input === undefined
        ? sourceEnd !== undefined && chunk.firstOffset + BigInt(chunk.count) >= sourceEnd
        : this.inputsReachedEnd(input.input, chunk));
    // Flushed before the chunk's results go out: a result decided at the last message read
    // takes the flushed windows too (a flush after it would have no new id to go under).
    if (reachedEnd && options.untilCaughtUp === true && config.flush.caughtUp) {
      processor.flush();
    }
    // With an idle flush, a result decided at the chunk's last message may wait (until the
    // next chunk, or the flush it then joins): a flush after it could go under no new id.
    const idleFlushMayFollow =
      config.flush.idleMs !== undefined &&
      failure === undefined &&
      !(reachedEnd && options.untilCaughtUp === true);
    // Steps that ended before a failing message are complete: publish them first.
    await this.publishReady(readAt, idleFlushMayFollow);
    if (failure !== undefined) throw failure.error;
    // The end was read at the start, or no end was reached.
    if (reachedEnd && sourceEnd !== undefined) {
      this.caughtUp = true;
      this.reportCaughtUp(sourceEnd);
      if (options.untilCaughtUp === true) return true;
    }
    return false;
  }

  /**
   * Processes `chunk` in slices of `SLICE_MESSAGES`, publishing what each slice but the last
   * decided before the next, and letting the event loop turn once it was held `TURN_MS`: a
   * result decided early in a large chunk leaves, and its confirm comes in, while the rest is
   * processed. The last slice's results are `step`'s to publish. A processing failure ends it.
   * Over several inputs, `input` is the chunk's.
   */
  private async processInSlices(
    chunk: SourceChunk,
    readAt: number,
    input: number | undefined,
  ): Promise<{ error: unknown } | undefined> {
    const { processor, turns } = this;
    for (let start = 0; ; start += SLICE_MESSAGES) {
      const end = Math.min(start + SLICE_MESSAGES, chunk.count);
      try {
        processor.process(end - start === chunk.count ? chunk : sliceOf(chunk, start, end), input);
      } catch (error) {
        return { error };
      }
      if (end >= chunk.count) return undefined;
      // Not the chunk's last message: no idle flush can come before the next one.
      await this.publishReady(readAt);
      if (turns.held) await nextTurn();
    }
  }

  /**
   * Where the source is read from, asked by the source when it may deliver: the resume point
   * found, the skip request applied, the start and a catch-up at once reported. Bound once:
   * the source holds it.
   */
  private readonly resumePoint = async (): Promise<bigint | 'first'> => {
    const { config, resumePoint } = this.job;
    const { options, processor, sourceEnd } = this;
    const found = await resumePoint.read(processor, this.hasPublished);
    this.found = found;
    const { last, from } = found;
    this.previousId = found.lastId;
    // No step stored counts as published when the job found an earlier version's under id 0.
    const published = found.lastId !== 0n || found.published === true;
    if (config.processor.onError === 'stop') {
      processor.skipThrough(skipsThrough(this.skipRequest, publishedThrough(last, published)));
    }
    this.reportStarted(found, sourceEnd, this.counters.restarts);
    // Nothing to read up to the end known at the start: caught up before the first chunk.
    this.caughtUp =
      sourceEnd !== undefined &&
      (sourceEnd === 0n ||
        (found.inputs === undefined
          ? publishedThrough(last, published) + 1n >= sourceEnd
          : this.inputsStartAtEnd(found.inputs)));
    if (this.caughtUp) this.reportCaughtUp(sourceEnd ?? 0n);
    if (this.caughtUp && options.untilCaughtUp === true) {
      this.stopAtStart = true;
      this.reading.abort();
    }
    return from;
  };

  private readonly hasPublished = (): Promise<boolean> =>
    (this.publishedScan ??= this.job.config.target.hasPublished());

  /** Whether an earlier version's result for offset 0 is stored under id 0 (rule 3), once. */
  private readonly zeroStored = (found: FoundStart): Promise<boolean> =>
    (this.zeroWasStored ??= stepZeroStored(found));

  /** `idleFlushMayFollow`: a result an idle flush would join stays behind (see `step`). */
  private async publishReady(readAt: number, idleFlushMayFollow = false): Promise<void> {
    const observed = this.job.events.has('published');
    for (const result of this.processor.takeReady(idleFlushMayFollow)) {
      const { found } = this;
      const duplicate =
        found !== undefined && (await isStoredStepZero(found, result.lastOffset, this.zeroStored));
      const count = duplicate ? this.countDuplicate : this.countResult;
      const confirmed = observed ? this.confirmObserved(result, duplicate, readAt, count) : count;
      if (duplicate) {
        // Its id under this scheme is above 0: the broker would store it a second time.
        confirmed();
        continue;
      }
      const writes = this.encode(result);
      const routingKey = this.routingKey(result);
      // Counted on the last write's confirm: a publish lost with its connection is published
      // again, and the writes before it were confirmed first (the publisher keeps their order).
      // A step not whole written again is written whole: the broker discards the writes it
      // holds (their ids are not above its last), and a restart stays one plain replay.
      for (const [index, messages] of writes.entries()) {
        const last = index === writes.length - 1;
        const id = writeId(result.lastOffset, index, writes.length);
        await this.publisher.publish(id, messages, last ? confirmed : NOTHING, routingKey);
      }
      this.previousId = lastWriteId(result.lastOffset);
    }
  }

  /**
   * The source from the broker's resume point, read when the source asks (`resumePoint`), and
   * from 1 instead when retention removed the source's head (rule 7 of
   * ./resume/resume-point.ts).
   */
  private async *readFromResumePoint(): AsyncGenerator<SourceChunk, void, undefined> {
    const source = this.job.config.source as Source;
    const { signal } = this;
    const group: GroupObserver = { standby: (name) => this.reportStandby(name) };
    let checked = false;
    let resumeAtOne = false;
    for await (const chunk of source.read(this.resumePoint, signal, group)) {
      if (!checked) {
        checked = true;
        // The source asked the resume point before delivering anything.
        const start = this.found;
        resumeAtOne =
          start !== undefined && (await resumesAtOne(start, chunk.firstOffset, start.hasPublished));
        if (resumeAtOne) break;
      }
      yield chunk;
    }
    if (resumeAtOne) yield* source.read(1n, signal, group);
  }

  /**
   * Several inputs read at once (./merge/read-inputs.ts), each from where the resume point
   * says, asked once when the first of them may deliver.
   */
  private readMerged(source: MergedInputs): AsyncGenerator<InputDelivery, void, undefined> {
    let starting: Promise<FoundStart> | undefined;
    const start = async (input: number): Promise<bigint | 'first'> => {
      starting ??= this.resumePoint().then(() => this.found as FoundStart);
      const from = (await starting).inputs?.[input] ?? 'first';
      this.inputsNext[input] = from === 'first' ? 0n : from;
      return from;
    };
    const group: GroupObserver = { standby: (name) => this.reportStandby(name) };
    return readInputs(source.inputs, start, this.signal, {
      idleAfterMs: source.idleAfterMs,
      mayRead: (input) => this.mayRead(input),
      waits: (input, waits) => this.reportReadWaits(input, waits),
      group,
    });
  }

  /**
   * Over several inputs, whether input `input` may deliver more, or waits while it holds
   * `maxBufferedPerInput` messages ahead of the others.
   */
  private mayRead(input: number): boolean {
    const { source } = this.job.config;
    const maxBuffered = (source as MergedInputs).maxBufferedPerInput;
    return this.processor.mayRead?.(input, maxBuffered) ?? true;
  }

  /** An input's read begins or ends waiting for the others (`maxBufferedPerInput`): logged. */
  private reportReadWaits(input: number, waits: boolean): void {
    this.job.config.logger.debug(
      { ...this.job.where(), input: this.inputStream(input) },
      waits
        ? 'an input holds maxBufferedPerInput messages ahead of the others: its read waits for them'
        : 'the others caught up: the input is read again',
    );
  }

  /** Over several inputs, whether each one starts at (or past) its end at the start. */
  private inputsStartAtEnd(starts: readonly (bigint | 'first')[]): boolean {
    const ends = this.inputEnds;
    return (
      ends !== undefined &&
      starts.every((from, input) => (from === 'first' ? 0n : from) >= (ends[input] as bigint))
    );
  }

  /**
   * Over several inputs, whether `chunk` of `input` completes the reading of every end. An
   * input waiting for the others counts as read: while they are at their ends, reading it on
   * would hold more of its messages and release none.
   */
  private inputsReachedEnd(input: number, chunk: SourceChunk): boolean {
    this.inputsNext[input] = chunk.firstOffset + BigInt(chunk.count);
    const ends = this.inputEnds;
    return (
      ends !== undefined &&
      ends.every((end, i) => (this.inputsNext[i] ?? 0n) >= end || !this.mayRead(i))
    );
  }

  /**
   * Input `input` of several delivered nothing for `idleAfter`: the merge goes on without it.
   * A failure of the processor is returned, as `processInSlices` returns one.
   */
  private leaveOutCaught(input: number): { error: unknown } | undefined {
    this.job.config.logger.info(
      { ...this.job.where(), input: this.inputStream(input) },
      'an input delivered nothing for idleAfter: the job goes on without it until it does',
    );
    try {
      this.processor.leaveOut?.(input);
      return undefined;
    } catch (error) {
      return { error };
    }
  }

  /** The stream of input `input` of a job over several inputs. */
  private inputStream(input: number): string {
    const { source } = this.job.config;
    return source instanceof MergedInputs ? (source.inputs[input]?.stream ?? '') : source.stream;
  }

  /**
   * The source's end at the start: needed to stop `untilCaughtUp`, and asked as well when
   * someone waits for `caughtUp` — then a failure to answer costs only that event.
   */
  private async readSourceEnd(): Promise<bigint | undefined> {
    if (this.options.untilCaughtUp === true) return this.sourceEndNow();
    if (!this.job.events.has('caughtUp')) return undefined;
    try {
      return await this.sourceEndNow();
    } catch (error) {
      this.job.config.logger.warn(
        { ...this.job.where(), err: error },
        "the source's end offset could not be read: no caughtUp event in this start",
      );
      return undefined;
    }
  }

  /** The source's end; over several inputs their sum, each one's kept in `inputEnds`. */
  private async sourceEndNow(): Promise<bigint> {
    const { source } = this.job.config;
    if (!(source instanceof MergedInputs)) return source.endOffset();
    const ends = await source.endOffsets();
    this.inputEnds = ends;
    return positionAfter(ends);
  }

  private reportStarted(found: FoundStart, sourceEnd: bigint | undefined, restarts: number): void {
    const { lastPublishingId, from } = found;
    const lastOffset = found.lastId !== 0n ? found.last : undefined;
    this.job.events.emit('started', { lastPublishingId, lastOffset, from, sourceEnd, restarts });
    this.job.config.logger.info(
      {
        ...this.job.where(),
        lastPublishingId: String(lastPublishingId),
        lastOffset: lastOffset === undefined ? undefined : String(lastOffset),
        from: String(from),
        sourceEnd: sourceEnd === undefined ? undefined : String(sourceEnd),
      },
      "job started from the broker's last publishing id",
    );
  }

  private reportStandby(group: string): void {
    const { stream } = this.job.config.source;
    this.job.events.emit('standby', { stream, group });
    this.job.config.logger.info(
      { ...this.job.where(), group },
      'standing by in the consumer group until the broker activates this instance',
    );
  }

  private reportStepDown(error: SourceDeactivatedError, inFlight: number): void {
    const { stream, group, offset: nextOffset } = error;
    this.job.events.emit('stepDown', { stream, group, nextOffset, inFlight });
    this.job.config.logger.info(
      {
        ...this.job.where(),
        group,
        nextOffset: nextOffset === undefined ? undefined : String(nextOffset),
        inFlight,
      },
      'told to step down; answering once the results in flight are confirmed',
    );
  }

  private reportCaughtUp(offset: bigint): void {
    this.job.events.emit('caughtUp', { offset });
    this.job.config.logger.info({ ...this.job.where(), offset: String(offset) }, 'job caught up');
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
      this.job.events.emit('published', {
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

  private routingKey(result: StepResult<R>): string | undefined {
    const { route } = this.job.config;
    if (route === undefined) return undefined;
    let key: unknown;
    try {
      key = route(result);
    } catch (cause) {
      throw new ProcessingError(this.job.config.source.stream, result.lastOffset, 'route', cause);
    }
    if (typeof key !== 'string') {
      const cause = new TypeError(`route must return a string, returned ${typeof key}`);
      throw new ProcessingError(this.job.config.source.stream, result.lastOffset, 'route', cause);
    }
    return key;
  }

  /** The step's writes (one, unless it does not fit: see `encodeStep`), each checked. */
  private encode(result: StepResult<R>): Uint8Array[][] {
    const { config } = this.job;
    const { maxWriteBytes } = config.target;
    let writes: Uint8Array[][];
    try {
      writes = config.encode(result, { previous: this.previousId, maxWriteBytes });
    } catch (cause) {
      // An aggregate value msgpack cannot carry: the job stops before publishing it.
      throw new ProcessingError(config.source.stream, result.lastOffset, 'encode', cause);
    }
    for (const messages of writes) {
      const size = writeSize(messages);
      if (size > maxWriteBytes) {
        throw new OutputTooLargeError(
          config.source.stream,
          result.firstOffset,
          result.lastOffset,
          size,
          maxWriteBytes,
          !config.flush.resultFormat
            ? 'own-encoding'
            : heldBy(messages[0] as Uint8Array) === 'dead-letters'
              ? 'dead-letter'
              : 'output',
        );
      }
    }
    if (writes.length > MAX_STEP_WRITES) {
      const cause = new RangeError(
        `the step takes ${writes.length} writes, over the ${MAX_STEP_WRITES} one step may take`,
      );
      throw new ProcessingError(config.source.stream, result.lastOffset, 'encode', cause);
    }
    return writes;
  }
}

/** The confirm callback of a step's writes before its last: the step counts at its last. */
const NOTHING = (): void => undefined;
