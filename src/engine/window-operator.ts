import { ProcessingError, type ProcessingStage } from '../common/errors.js';
import type { Key, KeyedOutput } from '../common/keyed-output.js';
import type { Aggregator } from '../common/aggregator.js';
import type { EventTimeWindowSpec } from '../windows/event-time-spec.js';
import type { EventTimeWindows } from '../windows/event-time-kind.js';
import { createWindows } from '../windows/event-time-kinds.js';
import { KeyedWindows, NO_WINDOW, type WindowId } from '../windows/keyed-windows.js';
import { Watermark } from '../windows/watermark.js';
import { eventTimeWindowRange } from '../windows/event-time-range.js';
import type { SourceChunk } from '../ports/ports.js';
import type { RecoveryState, StepResult } from '../result-format/step-result.js';
import { MessageReader, ReadOutcome } from './message-reader.js';
import { Rejections } from './rejections.js';
import type { StepProcessorConfig } from './step-processor.js';
import type { EarlyUpdates } from '../api/policies.js';
import type { MessageValuesDecoder } from '../result-format/results-source.js';
import { NO_OFFSET, NONE, type Processor } from './processor.js';
import type { ResumeAt, ResumeStart } from './resume/resume-point.js';
import { recoveryStateOf } from './resume/recovery-state.js';
import type { MergeRecord } from '../result-format/merge-record.js';
import type { ReleasedItem } from './merge/input-merge.js';
import { FILTERED, type DecodedMessage, type DecodedValues } from './merge/decoded-message.js';

export interface WindowOperatorConfig<T, A, R> extends Omit<
  StepProcessorConfig<T, A, R>,
  'window' | 'late'
> {
  readonly window: EventTimeWindowSpec;
  readonly late: 'drop' | 'side';
  /** Milliseconds of disorder the watermark allows: it trails the latest event time by this. */
  readonly maxOutOfOrderness: number;
  /** When open windows are published before they close, as outputs marked not final. */
  readonly early: EarlyUpdates | undefined;
}

/** What the operator of a job over several inputs is told of them (see `processMerged`). */
export interface MergedOperation {
  /** The inputs' streams, by input index: a failure names its message's. */
  readonly inputs: readonly string[];
  /** The merge's record at a result's resume offset, which its recovery state carries. */
  recordAt(offset: bigint): MergeRecord;
}

/**
 * The synchronous heart of a job over event-time windows (Flink's WindowOperator): every
 * message goes through the shared reader, then to its key's windows (placed by the window
 * kind, ../windows/event-time-kinds.ts), moves the watermark, and closes every window the
 * kind's trigger fires (the watermark passing it, or a count reached). A message that
 * closes windows is the decision point: ONE result, published with that message's offset as
 * its publishing id, holds the closed windows and what else was read since the previous
 * result (late values or count, filtered count, dead letters).
 *
 * Windows stay open across results, so a result also records what a restart needs
 * (RecoveryState); `restore` takes it back, and the re-read up to the restored result's id
 * rebuilds the open windows without publishing anything again.
 */
export class WindowOperator<T, A, R> implements Processor<R> {
  /** Results decided so far, in order; the runner takes them after each chunk. */
  readonly ready: StepResult<R>[] = [];

  private readonly windows = new KeyedWindows<A>();
  private readonly watermark: Watermark;
  private readonly reader: MessageReader<T>;
  private readonly rejections: Rejections;
  private readonly aggregator: Aggregator<T, A, R>;
  /** Where a value goes and when its window fires: the spec's kind. */
  private readonly kind: EventTimeWindows<T>;
  /** The windows closing at this message; reused, so a message allocates no array. */
  private readonly closing: WindowId[] = [];
  /**
   * Open windows whose early update is due at this message (`early: { every }`): a set, so
   * that a message of several values updates each window once, after all of them.
   */
  private readonly updating = new Set<WindowId>();
  private readonly earlyEvery: number;
  /** `early: 'each-result'`: the windows mark themselves changed as they fold. */
  private readonly earlyEachResult: boolean;

  /** What the result being built holds besides windows. */
  private resultFirstOffset = NO_OFFSET;
  private messages = 0;
  private late: unknown[] = [];
  private lateDropped = 0;
  private filtered = 0;

  /** The message being processed, as its chunk's first offset and its index in the chunk. */
  private chunkOffset = NO_OFFSET;
  private index = 0;
  /** The offset of the last message read: a flush's publishing id. */
  private lastRead = NO_OFFSET;
  /**
   * The offset of the last flush, while a window it emptied may still be open: a restart
   * re-reading past it must repeat it (a wall-clock decision the messages cannot make). Only
   * the last one matters: every window open at it was emptied by it, whatever came before.
   */
  private lastFlush = NO_OFFSET;

  /** Set by `restore`: offsets up to here were published; their results are rebuilt only. */
  private replayThrough = NO_OFFSET;

  /** `merged`: the operator of a job over several inputs (see `processMerged`). */
  constructor(
    private readonly config: WindowOperatorConfig<T, A, R>,
    private readonly merged?: MergedOperation,
  ) {
    this.watermark = new Watermark(config.maxOutOfOrderness);
    this.reader = new MessageReader(
      config,
      eventTimeWindowRange(config.window, config.maxOutOfOrderness),
    );
    this.rejections = new Rejections(config.stream, config.onError, config.maxDeadLetters);
    this.aggregator = config.aggregator;
    this.earlyEvery = typeof config.early === 'object' ? config.early.every : 0;
    this.earlyEachResult = config.early === 'each-result';
    this.kind = createWindows(
      config.window.assignment,
      {
        windows: this.windows,
        watermark: this.watermark,
        aggregator: this.aggregator,
        offset: () => this.offsetNow(),
        open: (key, start, end) => this.open(key, start, end),
        accumulatorOf: (window) => this.accumulatorOf(window),
        fold: (window, accumulator) => this.fold(window, accumulator),
        close: (window) => {
          this.windows.remove(window);
          this.closing.push(window);
        },
      },
      { multiValue: config.readValues !== undefined },
    );
  }

  /** Its windows stay open across results: a start always goes on from the last result. */
  readonly readsLastResult = true;

  /**
   * From the recovery state of the producer's last result (rule 5 of ./resume/resume-point.ts),
   * or from the first offset when it never published.
   */
  resume(start: ResumeStart): Promise<ResumeAt> {
    const state = recoveryStateOf(start); // throws what stops the job
    if (state === undefined) {
      return Promise.resolve({ from: 'first', published: false, atOneAfterRetention: false });
    }
    this.restore(state, start.last);
    return Promise.resolve({ from: state.offset, published: true, atOneAfterRetention: false });
  }

  /**
   * Continues from a stored result: the source is then read from `state.offset`, and nothing
   * is decided for offsets up to `through` (the result's publishing id) but the windows still
   * open after it, which those offsets rebuild.
   */
  restore(state: RecoveryState, through: bigint): void {
    this.watermark.restore(state.offsetWatermark); // -Infinity (none yet) stays -Infinity
    this.replayThrough = through;
    this.lastFlush = state.lastFlush ?? NO_OFFSET;
    this.kind.restore?.(state);
  }

  skipThrough(offset: bigint): void {
    this.rejections.skipsThrough = offset;
  }

  /** Processes every message of `chunk`; throws ProcessingError under the 'stop' policy. */
  process(chunk: SourceChunk): void {
    if (chunk.count === 0) return;
    const bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    const { readValues } = this.config;
    const { firstOffset } = chunk;
    // Offsets as indexes into the chunk: a message's offset becomes a bigint only where one
    // is needed (a result, a window's first message, an error), never per message.
    const replayed = indexesUpTo(this.replayThrough, chunk);
    const replayEnd = indexIn(chunk, this.replayThrough);
    const flushedAt = indexIn(chunk, this.lastFlush);
    this.chunkOffset = firstOffset;
    for (let index = 0; index < chunk.count; index++) {
      this.index = index;
      const replaying = index < replayed;
      if (this.resultFirstOffset === NO_OFFSET) this.resultFirstOffset = this.offsetNow();
      this.messages++;
      if (readValues === undefined) this.processMessage(chunk, bytes, index, replaying);
      else this.processValues(chunk, index, readValues, replaying);
      if (replaying && index === flushedAt) this.emptyWindows(undefined);
      if (replaying && index === replayEnd) this.endReplay();
    }
    this.lastRead = firstOffset + BigInt(chunk.count - 1);
  }

  /**
   * Processes items a merge of several inputs released (./merge/merging-processor.ts), decoded
   * by their inputs' readers, in merged order: a merged position is an item's offset, its event
   * time places its value, and its merge time moves the watermark (the merge sorted the items by
   * it, so the windows it passes can take no item still to come but one late on its input).
   */
  processMerged(items: readonly ReleasedItem<DecodedMessage<T>>[]): void {
    for (const item of items) {
      const { position } = item;
      this.chunkOffset = position;
      this.index = 0;
      const replaying = position <= this.replayThrough;
      if (this.resultFirstOffset === NO_OFFSET) this.resultFirstOffset = position;
      this.messages++;
      const message = item.value;
      if (message === FILTERED) {
        this.filtered++;
      } else if ('values' in message) {
        this.placeValues(item, message, replaying);
      } else {
        this.placeMerged(item, message.key, message.value, item.eventTime, replaying);
        this.closeWindows(item.mergeTime, replaying);
      }
      if (replaying && position === this.replayThrough) this.endReplay();
      this.lastRead = position;
    }
  }

  /**
   * A result of another job released by the merge: each value to the windows of its own event
   * time, then the item's merge time closes windows once. A value above the merge time falls
   * into a window the merge has not passed; one below it is late only if its input's watermark
   * had passed its window, as on one input. A result of no value closes nothing.
   */
  private placeValues(
    item: ReleasedItem<DecodedMessage<T>>,
    message: DecodedValues<T>,
    replaying: boolean,
  ): void {
    const { values, keys, times } = message;
    // Counted while replaying too: the end of the replay resets what the result holds.
    this.lateDropped += message.counted;
    if (values.length === 0) return;
    this.kind.beginMessage?.();
    for (let i = 0; i < values.length; i++) {
      this.placeMerged(item, keys[i] ?? null, values[i] as T, times[i] as number, replaying);
    }
    this.closeWindows(item.mergeTime, replaying);
  }

  /** As `placeOrStop`, naming the input's message rather than its merged position. */
  private placeMerged(
    item: ReleasedItem<DecodedMessage<T>>,
    key: Key,
    value: T,
    time: number,
    replaying: boolean,
  ): void {
    try {
      this.place(key, value, time, replaying);
    } catch (cause) {
      const stream = this.merged?.inputs[item.input] ?? this.config.stream;
      throw new ProcessingError(stream, item.offset, 'reduce', cause);
    }
  }

  /** The offset of the message being processed. */
  private offsetNow(): bigint {
    return this.chunkOffset + BigInt(this.index);
  }

  private processMessage(
    chunk: SourceChunk,
    bytes: Buffer,
    index: number,
    replaying: boolean,
  ): void {
    const { reader } = this;
    const outcome = reader.read(chunk, bytes, index);
    if (outcome === ReadOutcome.Filtered) {
      this.filtered++;
      return;
    }
    if (outcome === ReadOutcome.Rejected) {
      this.reject(chunk, index, reader.stage, reader.cause, replaying);
      return;
    }
    const { value, time, key } = reader;
    this.placeOrStop(key, value, time, replaying);
    this.closeWindows(time, replaying);
  }

  /**
   * A message of several values (a result of another job): each value goes to its own
   * windows by its own event time (event-time windows need no contiguous steps), and the
   * message closes windows once, after all of them.
   */
  private processValues(
    chunk: SourceChunk,
    index: number,
    readValues: MessageValuesDecoder<T>,
    replaying: boolean,
  ): void {
    const { reader } = this;
    if (reader.readAll(chunk, index, readValues, true) === ReadOutcome.Rejected) {
      this.reject(chunk, index, reader.stage, reader.cause, replaying);
      return;
    }
    const { values, keys, times } = reader;
    this.kind.beginMessage?.();
    if (!replaying) this.lateDropped += reader.counted;
    let latest = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < values.length; i++) {
      const time = times[i] as number;
      this.placeOrStop(keys[i] ?? null, values[i] as T, time, replaying);
      if (time > latest) latest = time;
    }
    this.closeWindows(latest, replaying);
  }

  /**
   * `place`, with a failure of the aggregate (`add` or `merge`) stopping the job whatever the
   * error policy: its outcome depends on the window's accumulator, which a restart rebuilds
   * only in part for windows already published, so a dead letter of it would not replay.
   */
  private placeOrStop(key: Key, value: T, time: number, replaying: boolean): void {
    try {
      this.place(key, value, time, replaying);
    } catch (cause) {
      throw new ProcessingError(this.config.stream, this.offsetNow(), 'reduce', cause);
    }
  }

  /** Adds a value to its key's windows, or counts it late. Throws what `add` throws. */
  private place(key: Key, value: T, time: number, replaying: boolean): void {
    if (!this.kind.place(key, value, time, replaying) && !replaying) {
      if (this.config.late === 'drop') this.lateDropped++;
      else this.late.push(value);
    }
  }

  /**
   * What a window folds its next value into: a fresh `init()` for a new window or one a flush
   * emptied (an accumulator may itself be undefined or null, so its count tells).
   */
  private accumulatorOf(window: WindowId): A {
    const { windows } = this;
    return window !== NO_WINDOW && windows.count(window) > 0
      ? windows.accumulator(window)
      : this.aggregator.init();
  }

  private open(key: Key, start: number, end: number): WindowId {
    return this.windows.create(key, start, end, this.offsetNow(), this.watermark.value);
  }

  private fold(window: WindowId, accumulator: A): void {
    const { windows } = this;
    windows.fold(window, accumulator);
    if (this.earlyEachResult) windows.markChanged(window);
    if (this.earlyEvery > 0 && windows.count(window) % this.earlyEvery === 0) {
      this.updating.add(window);
    }
  }

  /**
   * After a message: the watermark moves to `time` (less the disorder allowed), and every
   * window it passed closes in one result.
   */
  private closeWindows(time: number, replaying: boolean): void {
    this.watermark.advance(time);
    this.kind.closeDue(this.closing);
    // A window a flush emptied and no message filled again closes without an output.
    if (this.lastFlush !== NO_OFFSET) dropEmpty(this.windows, this.closing);
    if (this.closing.length > 0 || this.updating.size > 0) {
      if (replaying) {
        // Published before the crash: rebuilt only to leave the same windows open.
        this.closing.length = 0;
        this.updating.clear();
      } else {
        this.fire(this.offsetNow());
      }
    }
    // The closed windows' outputs are built: their slots may hold new windows.
    this.windows.recycle();
  }

  /**
   * Whether a flush would decide a result of its own: messages were read since the last result
   * (its publishing id is the last one's offset, which must be above every id published).
   */
  private get readSinceResult(): boolean {
    return this.resultFirstOffset !== NO_OFFSET && this.lastRead > this.replayThrough;
  }

  /** Messages read since the last result, or a result held back for the flush to join. */
  get canFlush(): boolean {
    return this.readSinceResult || this.ready.length > 0;
  }

  /**
   * Holds back the last result when it is at the last offset read while windows stay open: a
   * flush after it is published could go under no new id, so an idle flush must join it.
   */
  takeReady(idleFlushMayFollow: boolean): StepResult<R>[] {
    const { ready } = this;
    const holds =
      idleFlushMayFollow && ready.at(-1)?.lastOffset === this.lastRead && this.windows.size > 0;
    return ready.splice(0, holds ? ready.length - 1 : ready.length);
  }

  /**
   * Publishes every open window now, marked flushed, at the last offset read (`FlushOptions`).
   * The watermark does not move: a later message of a flushed window folds into it afresh,
   * and its output when the window closes is marked as continuing the flushed one. Count
   * windows end with the flush. The flush's offset goes into the recovery state, so that a
   * restart re-reading past it repeats it. When a result was decided at that offset and is
   * not taken yet, the flushed windows join it: they could go under no other id.
   */
  flush(): void {
    const decided = this.ready.at(-1);
    const joins = decided !== undefined && decided.lastOffset === this.lastRead;
    if (!joins && !this.readSinceResult) return;
    const lastOffset = this.lastRead;
    this.emptyWindows(this.closing);
    if (joins && this.closing.length === 0) return; // no window holds anything to add to it
    this.lastFlush = lastOffset;
    this.fire(lastOffset, true);
    this.windows.recycle();
    if (joins) this.ready.splice(-2, 2, joined(decided, this.ready.at(-1) as StepResult<R>));
  }

  /**
   * What a flush does to the open windows: each non-empty one is output (into `into`, unless
   * replaying) and emptied, to be continued; or closed, when the kind ends windows at a flush.
   */
  private emptyWindows(into: WindowId[] | undefined): void {
    const { windows } = this;
    const ends = this.kind.endsAtFlush;
    const flushed: WindowId[] = [];
    for (const window of windows.openInCreationOrder()) {
      if (windows.count(window) > 0 || ends) flushed.push(window);
    }
    if (into !== undefined) flushed.sort(windows.closingOrder); // output in the closing order
    for (const window of flushed) {
      if (ends) windows.remove(window);
      if (into === undefined) windows.empty(window);
      else into.push(window);
    }
  }

  private fire(lastOffset: bigint, flushed = false): void {
    const { closing } = this;
    const outputs: KeyedOutput<R>[] = [];
    const span = { start: Number.POSITIVE_INFINITY, end: Number.NEGATIVE_INFINITY };
    try {
      for (const window of closing) {
        this.output(window, true, lastOffset, outputs, span);
        if (flushed && this.windows.isOpen(window)) this.windows.empty(window);
      }
    } finally {
      // A result that stops the job ('stop') throws out of here: the windows it closed are
      // removed already, and must not be closed again by a later call.
      closing.length = 0;
    }
    for (const window of this.earlyUpdates()) this.output(window, false, lastOffset, outputs, span);
    this.ready.push({
      firstOffset: this.resultFirstOffset,
      lastOffset,
      messages: this.messages,
      // A flush may publish no window at all (only late or filtered messages were read).
      window: outputs.length > 0 ? span : null,
      outputs,
      late: this.late.length > 0 ? this.late : NONE,
      lateDropped: this.lateDropped,
      filtered: this.filtered,
      deadLetters: this.rejections.take(),
      recovery: this.recoveryState(lastOffset),
      ...(flushed ? { flushed } : {}),
    });
    this.resetPending();
  }

  /** The open windows a result updates early, in creation order; each marked unchanged. */
  private earlyUpdates(): WindowId[] {
    const { early } = this.config;
    const due: WindowId[] = [];
    if (early === undefined) return due;
    if (early === 'each-result') {
      // The windows that changed, not every open one: the cost follows the updates.
      this.windows.takeChanged(due);
    } else {
      // Due at this message, and still open (a window that closed here has its final output).
      for (const window of this.updating) if (this.windows.isOpen(window)) due.push(window);
      this.updating.clear();
    }
    return due;
  }

  /** Appends a window's output (or its dead letter, if `result` throws); widens `span`. */
  private output(
    window: WindowId,
    final: boolean,
    lastOffset: bigint,
    outputs: KeyedOutput<R>[],
    span: { start: number; end: number },
  ): void {
    const { windows } = this;
    const bounds = this.kind.bounds(window);
    if (bounds.start < span.start) span.start = bounds.start;
    if (bounds.end > span.end) span.end = bounds.end;
    try {
      const value = this.aggregator.result(windows.accumulator(window));
      const key = windows.key(window);
      const count = windows.count(window);
      const { start, end } = bounds;
      // A literal of each shape, not spreads: one object per output rather than several.
      if (windows.continues(window)) {
        outputs.push(
          final
            ? { key, count, value, start, end, continues: true }
            : { key, count, value, start, end, final: false, continues: true },
        );
      } else {
        outputs.push(
          final
            ? { key, count, value, start, end }
            : { key, count, value, start, end, final: false },
        );
      }
    } catch (cause) {
      this.resultFailed(window, bounds, lastOffset, cause);
    }
  }

  /** What a restart from the result being fired needs (see RecoveryState). */
  private recoveryState(lastOffset: bigint): RecoveryState {
    const { windows } = this;
    const oldest = windows.oldestOpen();
    const watermark = this.watermark.value;
    const open = oldest !== NO_WINDOW;
    const offset = open ? windows.firstOffset(oldest) : lastOffset + 1n;
    // Flushes before the resume offset cannot touch a window the re-read rebuilds.
    if (this.lastFlush < offset) this.lastFlush = NO_OFFSET;
    const base = {
      watermark,
      offset,
      offsetWatermark: open ? windows.watermarkBefore(oldest) : watermark,
      ...(this.lastFlush === NO_OFFSET ? {} : { lastFlush: this.lastFlush }),
    };
    const own = this.kind.recovery?.();
    const state = own === undefined ? base : { ...base, ...own };
    return this.merged === undefined ? state : { ...state, merge: this.merged.recordAt(offset) };
  }

  /** The last published offset was re-read: from here on, results are new. */
  private endReplay(): void {
    this.replayThrough = NO_OFFSET;
    this.kind.endReplay?.();
    this.resetPending();
    // The result at that offset updated every window that had changed ('each-result').
    this.windows.clearChanged();
  }

  private resetPending(): void {
    this.resultFirstOffset = NO_OFFSET;
    this.messages = 0;
    this.lateDropped = 0;
    this.filtered = 0;
    if (this.late.length > 0) this.late = [];
    this.rejections.take();
  }

  private reject(
    chunk: SourceChunk,
    index: number,
    stage: ProcessingStage,
    cause: unknown,
    replaying: boolean,
  ): void {
    // While replaying, a dead letter belongs to a result already published: only 'stop' acts.
    if (replaying && this.config.onError !== 'stop') return;
    this.rejections.reject(chunk, index, stage, cause, this.resultFirstOffset);
  }

  /**
   * A window's `result` threw as it closed. Under 'dead-letter' its output is replaced by one
   * dead letter at the result's publishing id, naming the key, the window and its size.
   */
  private resultFailed(
    window: WindowId,
    bounds: { start: number; end: number },
    lastOffset: bigint,
    cause: unknown,
  ): void {
    const { windows } = this;
    const over = `window [${bounds.start}, ${bounds.end}) from offset ${windows.firstOffset(window)}`;
    this.rejections.resultFailed(
      lastOffset,
      windows.key(window),
      windows.count(window),
      over,
      cause,
    );
  }
}

/** Removes the windows without elements (emptied by a flush) from `closing`, in place. */
function dropEmpty<A>(windows: KeyedWindows<A>, closing: WindowId[]): void {
  let kept = 0;
  for (const window of closing) if (windows.count(window) > 0) closing[kept++] = window;
  closing.length = kept;
}

/**
 * A result decided at a message, and the flush made right after it at the same offset, as the
 * one result published under that offset: the flushed windows after the closed ones.
 */
function joined<R>(decided: StepResult<R>, flushed: StepResult<R>): StepResult<R> {
  const windows = [decided.window, flushed.window].filter((window) => window !== null);
  return {
    ...decided,
    window:
      windows.length === 0
        ? null
        : {
            start: Math.min(...windows.map((window) => window.start)),
            end: Math.max(...windows.map((window) => window.end)),
          },
    outputs: [...decided.outputs, ...flushed.outputs],
    recovery: flushed.recovery,
    flushed: true,
  };
}

/** How many of `chunk`'s messages are at or below `offset` (0 when none, or NO_OFFSET). */
function indexesUpTo(offset: bigint, chunk: SourceChunk): number {
  if (offset < chunk.firstOffset) return 0;
  const past = offset - chunk.firstOffset + 1n;
  return past >= BigInt(chunk.count) ? chunk.count : Number(past);
}

/** The index of `offset` in `chunk`, or -1 when it is not one of its offsets. */
function indexIn(chunk: SourceChunk, offset: bigint): number {
  const index = offset - chunk.firstOffset;
  return index >= 0n && index < BigInt(chunk.count) ? Number(index) : -1;
}
