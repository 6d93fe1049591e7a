import { Placement, type WindowAssigner } from '../windows/window-assigner.js';
import { TriggerResult, type Trigger } from '../windows/trigger.js';
import type { WindowSpec } from '../windows/window-spec.js';
import { stepWindowRange } from '../windows/event-time-range.js';
import type { Key } from '../common/keyed-output.js';
import { WindowBuffer } from '../windows/window-buffer.js';
import type { Aggregator } from '../common/aggregator.js';
import { ProcessingError, type ProcessingStage } from '../common/errors.js';
import type { SourceChunk } from '../ports/ports.js';
import type { StepResult } from '../result-format/step-result.js';
import type { BodyDecoder } from '../api/value-decoder.js';
import type { MessageValuesDecoder } from '../result-format/results-source.js';
import type { ValueStage } from './value-stage.js';
import { MessageReader, ReadOutcome } from './message-reader.js';
import { Rejections } from './rejections.js';
import type { ErrorPolicy, LatePolicy } from '../api/policies.js';
import { NO_OFFSET, NONE, type Processor } from './processor.js';
import { afterLast, type ResumeAt, type ResumeStart } from './resume/resume-point.js';
import { resumeAfterFlush } from './resume/after-flush.js';

export interface StepProcessorConfig<T, A, R> {
  readonly stream: string;
  readonly window: WindowSpec;
  /** Gives a body's value; `stages` turn it into the T the rest of the job reads. */
  readonly decode: BodyDecoder<unknown>;
  readonly stages: readonly ValueStage[];
  /**
   * Set for a source of results: reads each whole message into its values (replacing
   * `decode` and `stages`), all of which share the message's offset and so its step.
   */
  readonly readValues?: MessageValuesDecoder<T> | undefined;
  readonly eventTime: ((value: T) => number | Date) | undefined;
  readonly key: ((value: T) => string | number) | undefined;
  readonly aggregator: Aggregator<T, A, R>;
  readonly late: LatePolicy;
  readonly onError: ErrorPolicy;
  /** Under 'dead-letter': rejected messages one step may hold; the next one stops the job. */
  readonly maxDeadLetters: number;
}

/** What a step job's flushes ask of a start (see ./resume/after-flush.ts). */
export interface StepFlushing {
  /** The job flushes (on catching up, or when idle). */
  readonly flushes: boolean;
  /** Its results are the library's format, which a start can read back. */
  readonly resultFormat: boolean;
}

const NO_FLUSHES: StepFlushing = { flushes: false, resultFormat: false };

/**
 * The synchronous heart of a job: feeds each message of a chunk through
 * decode → filter/map → event time → window assignment → trigger → reducer → window buffer, and
 * collects a StepResult whenever a step ends. Its state is a function of the messages
 * since the last step end only, which is what makes a restart from the broker's last
 * publishing id + 1 reproduce an uninterrupted run exactly — and, after a flush, of the
 * window it left open, which the flushed result carries (`reopenFlushed`).
 *
 * Per message it allocates nothing beyond the decoded value (and what the user's
 * functions allocate): offsets are kept as (chunk, index) and turned into bigints only
 * at step boundaries and on errors.
 */
export class StepProcessor<T, A, R> implements Processor<R> {
  /** Results of the steps that ended, in order; the runner takes them after each chunk. */
  readonly ready: StepResult<R>[] = [];

  private readonly assigner: WindowAssigner;
  private readonly trigger: Trigger;
  private readonly buffer: WindowBuffer<T, A, R>;
  private readonly reader: MessageReader<T>;
  private readonly rejections: Rejections;

  private windowOpen = false;
  /**
   * The open window was published by a flush (`FlushOptions`), in this run or before a
   * restart (reopened from its result): a step in it continues that window.
   */
  private windowFlushed = false;
  private stepFirstOffset = NO_OFFSET;
  private stepMessages = 0;
  private lateDropped = 0;
  private filtered = 0;
  /** The last offset of the step being fired, for `resultFailed`. */
  private firingOffset = 0n;
  private late: unknown[] = [];
  /** Offset of the previous message, as (first offset of its chunk, index in the chunk). */
  private previousChunkOffset = NO_OFFSET;
  private previousIndex = 0;

  constructor(
    private readonly config: StepProcessorConfig<T, A, R>,
    private readonly flushing: StepFlushing = NO_FLUSHES,
  ) {
    this.assigner = config.window.createAssigner();
    this.trigger = config.window.createTrigger();
    this.buffer = new WindowBuffer(config.aggregator);
    this.reader = new MessageReader(config, stepWindowRange(config.window));
    this.rejections = new Rejections(config.stream, config.onError, config.maxDeadLetters);
  }

  skipThrough(offset: bigint): void {
    this.rejections.skipsThrough = offset;
  }

  /** Processes every message of `chunk`; throws ProcessingError under the 'stop' policy. */
  process(chunk: SourceChunk): void {
    const bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    const { readValues } = this.config;
    for (let index = 0; index < chunk.count; index++) {
      if (readValues === undefined) this.processMessage(chunk, bytes, index);
      else this.processValues(chunk, index, readValues);
      this.previousChunkOffset = chunk.firstOffset;
      this.previousIndex = index;
    }
  }

  private processMessage(chunk: SourceChunk, bytes: Buffer, index: number): void {
    const { config, reader } = this;
    const outcome = reader.read(chunk, bytes, index);
    if (outcome === ReadOutcome.Filtered) {
      this.filterOut(chunk, index);
      return;
    }
    if (outcome === ReadOutcome.Rejected) {
      this.reject(chunk, index, reader.stage, reader.cause);
      return;
    }
    const { value, time, key } = reader;

    if (!this.place(chunk, index, time)) {
      if (config.late === 'drop') this.lateDropped++;
      else this.late.push(value);
      this.countMessage(chunk, index);
      return;
    }

    try {
      this.buffer.add(key, value);
    } catch (cause) {
      this.reject(chunk, index, 'reduce', cause);
      return;
    }
    this.countMessage(chunk, index);
  }

  /**
   * A message of several values (a result of another job). It is placed once, by the event
   * time of its first value, and all its values go where the first went: they share one
   * offset, so a step must not end between them. The trigger sees the message once.
   */
  private processValues(
    chunk: SourceChunk,
    index: number,
    readValues: MessageValuesDecoder<T>,
  ): void {
    const { config, reader } = this;
    if (reader.readAll(chunk, index, readValues, false) === ReadOutcome.Rejected) {
      this.reject(chunk, index, reader.stage, reader.cause);
      return;
    }
    const { values, keys, counted } = reader;
    const time = reader.times[0] ?? 0;
    this.lateDropped += counted;

    if (values.length === 0) {
      // Nothing to place (a late or dead-letter part that is skipped): counted in the open step.
      this.beginStep(chunk, index);
    } else if (!this.place(chunk, index, time)) {
      if (config.late === 'drop') this.lateDropped += values.length;
      else for (const value of values) this.late.push(value); // no spread: any count
    } else {
      for (let i = 0; i < values.length; i++) {
        try {
          this.buffer.add(keys[i] ?? null, values[i] as T);
        } catch (cause) {
          // Values before this one are folded: the message can be neither whole in nor whole
          // out, so it stops the job even under 'dead-letter'.
          if (i > 0) {
            throw new ProcessingError(
              config.stream,
              chunk.firstOffset + BigInt(index),
              'reduce',
              cause,
            );
          }
          this.reject(chunk, index, 'reduce', cause);
          return;
        }
      }
    }
    this.countMessage(chunk, index);
  }

  /**
   * Places a message by its event time, ending the open step first if it belongs to a later
   * window. False when it is late and the late policy keeps it out of the window.
   */
  private place(chunk: SourceChunk, index: number, time: number): boolean {
    if (!this.windowOpen) {
      this.openWindow(chunk, index, time);
      return true;
    }
    const placement = this.assigner.place(time);
    if (placement === Placement.Later) {
      this.fire(this.previousOffset());
      this.openWindow(chunk, index, time);
      return true;
    }
    // A window a flush left open has no step until a message comes into it (any other open
    // window began its step when it opened: a boolean, not a BigInt compare, per message).
    if (this.windowFlushed) this.beginStep(chunk, index);
    if (placement === Placement.Inside) {
      this.assigner.add(time);
      return true;
    }
    return this.config.late === 'include';
  }

  private openWindow(chunk: SourceChunk, index: number, time: number): void {
    this.windowFlushed = false;
    this.beginStep(chunk, index);
    this.assigner.open(time);
    this.assigner.add(time);
    this.windowOpen = true;
  }

  private beginStep(chunk: SourceChunk, index: number): void {
    if (this.stepFirstOffset === NO_OFFSET)
      this.stepFirstOffset = chunk.firstOffset + BigInt(index);
  }

  /**
   * A value the job's filter refused still belongs to its step's offsets (the step's
   * publishing id may be its offset), so it is counted there, as filtered. It is no element
   * of the window: a count window counts values that passed.
   */
  private filterOut(chunk: SourceChunk, index: number): void {
    this.beginStep(chunk, index);
    this.stepMessages++;
    this.filtered++;
  }

  /** Every message of a step passes here once, whatever became of it, so counts are exact. */
  private countMessage(chunk: SourceChunk, index: number): void {
    this.stepMessages++;
    if (this.trigger.onElement() === TriggerResult.FireAndPurge) {
      this.fire(chunk.firstOffset + BigInt(index));
    }
  }

  private reject(chunk: SourceChunk, index: number, stage: ProcessingStage, cause: unknown): void {
    this.beginStep(chunk, index);
    this.rejections.reject(chunk, index, stage, cause, this.stepFirstOffset);
    this.countMessage(chunk, index);
  }

  /**
   * Every result decided: none waits for an idle flush, as a step is decided at a message that
   * either ends it (a count), leaving nothing open, or starts the next one, which a flush then
   * publishes under a later offset.
   */
  takeReady(): StepResult<R>[] {
    return this.ready.splice(0);
  }

  /** Whether a flush would publish anything: a step is open. */
  get canFlush(): boolean {
    return this.stepMessages > 0;
  }

  /**
   * Publishes the open step now, marked flushed (`FlushOptions`). A window with event-time
   * bounds stays open, emptied: a later message inside it makes a step whose outputs are
   * marked `continues`, one of a later window starts a fresh step, one before it is late as
   * before. A count window ends with the flush: the next step counts n afresh.
   */
  flush(): void {
    if (this.stepMessages > 0) this.fire(this.previousOffset(), true);
  }

  /** Only a flushing job's window with event-time bounds goes on from its last result. */
  get readsLastResult(): boolean {
    const { flushes, resultFormat } = this.flushing;
    return flushes && resultFormat && this.config.window.hasEventTimeBounds;
  }

  /**
   * From the last id + 1 (rules 2 and 3 of ./resume/resume-point.ts); a flushing job past the
   * window its last result flushed (rule 6).
   */
  resume(start: ResumeStart): Promise<ResumeAt> {
    if (!this.flushing.flushes) {
      const from = afterLast(start);
      return Promise.resolve({ from, published: undefined, atOneAfterRetention: true });
    }
    const result = this.readsLastResult ? start.lastResult : undefined;
    return resumeAfterFlush(start, result, this.config.window.describe(), (window) =>
      this.reopenFlushed(window),
    );
  }

  /**
   * After a restart at a result a flush published: reopens its window from the bounds the
   * result carries, as the flush left it, so that the next step tells whether it continues
   * it. A window without event-time bounds ended with the flush, and an assigner that cannot
   * reopen starts afresh.
   */
  private reopenFlushed(window: { readonly start: number; readonly end: number }): void {
    const { assigner } = this;
    if (!this.config.window.hasEventTimeBounds || assigner.reopen === undefined) return;
    assigner.reopen(window.start, window.end);
    this.windowOpen = true;
    this.windowFlushed = true;
  }

  private fire(lastOffset: bigint, flushed = false): void {
    if (this.stepMessages === 0) return;
    this.firingOffset = lastOffset;
    const outputs = this.buffer.drain(this.resultFailed, this.windowFlushed);
    this.ready.push({
      firstOffset: this.stepFirstOffset,
      lastOffset,
      messages: this.stepMessages,
      window: this.windowOpen ? this.assigner.snapshot() : null,
      outputs,
      // Fresh arrays only when used: results own theirs, and most steps have neither.
      late: this.late.length > 0 ? this.late : NONE,
      lateDropped: this.lateDropped,
      filtered: this.filtered,
      deadLetters: this.rejections.take(),
      ...(flushed ? { flushed } : {}),
    });
    this.trigger.clear();
    // A flush ends the step, not a window with event-time bounds: later messages may be in it.
    this.windowFlushed = flushed && this.windowOpen && this.config.window.hasEventTimeBounds;
    this.windowOpen = this.windowFlushed;
    this.stepFirstOffset = NO_OFFSET;
    this.stepMessages = 0;
    this.lateDropped = 0;
    this.filtered = 0;
    if (this.late.length > 0) this.late = [];
  }

  /**
   * A key's `result` threw when its step ended: the key's inputs are the step's offsets.
   * Bound once: a step of `count(1)` or `.transform()` fires at every message.
   */
  private readonly resultFailed = (key: Key, count: number, cause: unknown): void => {
    const lastOffset = this.firingOffset;
    const offsets = `offsets ${this.stepFirstOffset}..${lastOffset}`;
    this.rejections.resultFailed(lastOffset, key, count, offsets, cause);
  };

  private previousOffset(): bigint {
    return this.previousChunkOffset + BigInt(this.previousIndex);
  }
}
