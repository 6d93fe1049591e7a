import type { SourceChunk } from '../../ports/ports.js';
import type { MessageValuesDecoder } from '../../result-format/results-source.js';
import type { StepResult } from '../../result-format/step-result.js';
import { eventTimeWindowRange } from '../../windows/event-time-range.js';
import { MessageReader, ReadOutcome } from '../message-reader.js';
import { NO_OFFSET, type Processor } from '../processor.js';
import { Rejections } from '../rejections.js';
import { recoveryStateOf } from '../resume/recovery-state.js';
import type { ResumeAt, ResumeStart } from '../resume/resume-point.js';
import { WindowOperator, type WindowOperatorConfig } from '../window-operator.js';
import { FILTERED, type DecodedMessage, type DecodedValues } from './decoded-message.js';
import { InputMerge } from './input-merge.js';

/**
 * The window operator's config for a job over several inputs: their streams, in order, and for
 * `fromResults` inputs, each one's reader of a whole result into its values.
 */
export interface MergingConfig<T, A, R> extends WindowOperatorConfig<T, A, R> {
  readonly inputs: readonly string[];
  readonly inputValues?: readonly MessageValuesDecoder<T>[] | undefined;
}

/**
 * The processor of a job over several inputs (docs/internals/many-inputs.md): each input's
 * messages are read ONCE by that input's reader (decode, filter/map, event time, key) and
 * offered to the merge, which releases them in merged order to the window operator, their
 * merged positions as offsets. The merge orders by event time and keeps every input's
 * watermark (less `maxOutOfOrderness`), so the operator's watermark is the merge time of the
 * last item: windows close when the merge has passed them on every input.
 *
 * A `fromResults` input's message is read whole into its values, ONE item (`offerValues`).
 *
 * Each result's recovery state carries the merge's record at its resume offset; a restart
 * builds the merge from it and reads every input again from the record's `from`.
 */
export class MergingProcessor<T, A, R> implements Processor<R> {
  readonly readsLastResult = true;
  private readonly operator: WindowOperator<T, A, R>;
  private readonly readers: MessageReader<T>[];
  /** Each input's error policy: 'stop' (a failure names the input's stream and offset). */
  private readonly rejections: Rejections[];
  private merge: InputMerge<DecodedMessage<T>>;
  /** Where each input is read from: its record's `from`, or 'first' when none. */
  private starts: readonly (bigint | 'first')[];
  /** The last position published before this start: re-released, not published again. */
  private replayThrough = NO_OFFSET;
  /** Inputs found silent while re-releasing what was published: left out once that is done. */
  private readonly silentInReplay = new Set<number>();

  constructor(private readonly config: MergingConfig<T, A, R>) {
    const { inputs, maxOutOfOrderness } = config;
    // The merge applies the disorder allowed, per input; the items come out sorted.
    this.operator = new WindowOperator(
      { ...config, maxOutOfOrderness: 0 },
      {
        inputs,
        recordAt: (offset) => {
          const record = this.merge.recordAt(offset);
          // Resume offsets never go back: no record is asked before this one again.
          this.merge.forgetBefore(offset);
          return record;
        },
      },
    );
    const range = eventTimeWindowRange(config.window, maxOutOfOrderness);
    this.readers = inputs.map(() => new MessageReader(config, range));
    this.rejections = inputs.map(
      (stream) => new Rejections(stream, config.onError, config.maxDeadLetters),
    );
    this.merge = new InputMerge(inputs.length, maxOutOfOrderness);
    this.starts = inputs.map(() => 'first');
  }

  /** Rule 5 of ../resume/resume-point.ts, with the merge restored from the record. */
  resume(start: ResumeStart): Promise<ResumeAt> {
    const state = recoveryStateOf(start); // throws what stops the job
    const { inputs, maxOutOfOrderness } = this.config;
    if (state === undefined) {
      return Promise.resolve({
        from: 'first',
        published: false,
        atOneAfterRetention: false,
        inputs: this.starts,
      });
    }
    const record = state.merge;
    if (record?.inputs.length !== inputs.length) {
      throw start.recoveryError(
        record === undefined
          ? 'its result carries no merge record (written by a job over one input)'
          : `its merge record holds ${record.inputs.length} inputs, the job reads ${inputs.length}`,
      );
    }
    this.operator.restore(state, start.last);
    this.replayThrough = start.last;
    this.merge = new InputMerge(inputs.length, maxOutOfOrderness, record);
    this.starts = inputs.map((_, input) => this.merge.startOffset(input));
    return Promise.resolve({
      from: state.offset,
      published: true,
      atOneAfterRetention: false,
      inputs: this.starts,
    });
  }

  /** Reads every message of `chunk` of input `input` into the merge, and processes what it releases. */
  process(chunk: SourceChunk, input = 0): void {
    if (chunk.count === 0) return;
    this.silentInReplay.delete(input);
    const reader = this.readers[input] as MessageReader<T>;
    const bytes = Buffer.from(chunk.bytes.buffer, chunk.bytes.byteOffset, chunk.bytes.byteLength);
    const { merge } = this;
    const readValues = this.config.inputValues?.[input];
    for (let index = 0; index < chunk.count; index++) {
      const offset = chunk.firstOffset + BigInt(index);
      if (readValues !== undefined) {
        this.offerValues(chunk, index, offset, input, readValues);
        continue;
      }
      const outcome = reader.read(chunk, bytes, index);
      if (outcome === ReadOutcome.Read) {
        merge.offer(input, offset, reader.time, { value: reader.value, key: reader.key });
      } else if (outcome === ReadOutcome.Filtered) {
        // No event time: it goes at its input's watermark, counted in the result that holds it.
        merge.offer(input, offset, Number.NEGATIVE_INFINITY, FILTERED);
      } else {
        const rejections = this.rejections[input] as Rejections;
        rejections.reject(chunk, index, reader.stage, reader.cause, NO_OFFSET); // throws: 'stop'
      }
    }
    this.releaseAll();
  }

  /**
   * A result of another job: ONE item, as it is one offset (a step never splits it). The item
   * goes by the least event time of its values, so none of them can be placed after an item of
   * a later time; the greatest moves its input's watermark, as it would on one input. A result
   * of no value (only early updates, or parts skipped) goes at its input's watermark.
   */
  private offerValues(
    chunk: SourceChunk,
    index: number,
    offset: bigint,
    input: number,
    readValues: MessageValuesDecoder<T>,
  ): void {
    const reader = this.readers[input] as MessageReader<T>;
    if (reader.readAll(chunk, index, readValues, true) === ReadOutcome.Rejected) {
      const rejections = this.rejections[input] as Rejections;
      rejections.reject(chunk, index, reader.stage, reader.cause, NO_OFFSET); // throws: 'stop'
      return;
    }
    const { values, keys, times, counted } = reader;
    let least = Number.POSITIVE_INFINITY;
    let latest = Number.NEGATIVE_INFINITY;
    for (const time of times) {
      if (time < least) least = time;
      if (time > latest) latest = time;
    }
    // The reader's keys and times are reused for its next message: the item keeps copies.
    const item: DecodedValues<T> = { values, keys: [...keys], times: [...times], counted };
    if (values.length === 0) this.merge.offer(input, offset, Number.NEGATIVE_INFINITY, item);
    else this.merge.offer(input, offset, least, item, latest);
  }

  /**
   * Input `input` was silent for `idleAfter`: the merge goes on without it until it delivers.
   * Not while what was published is re-released: the record's floors bring every input's
   * bound past it once each is read to where it was, and a floor decided before then would
   * move an item that was published.
   */
  leaveOut(input: number): void {
    if (this.replaying) {
      this.silentInReplay.add(input);
      return;
    }
    this.merge.leaveOut(input);
    this.releaseAll();
  }

  /**
   * Whether input `input` may deliver more: not while it holds `maxBuffered` items or more and
   * is ahead of the merge's bound (its items wait for a lagging input). The inputs that hold
   * the bound back are always read, so the merge always moves on.
   */
  mayRead(input: number, maxBuffered: number): boolean {
    return this.merge.heldBy(input) < maxBuffered || !this.merge.isAhead(input);
  }

  /** Whether the merge has still to release a position published before this start. */
  private get replaying(): boolean {
    return this.merge.position <= this.replayThrough;
  }

  /** Hands the operator what the merge releases, then leaves out what fell silent meanwhile. */
  private releaseAll(): void {
    this.operator.processMerged(this.merge.release());
    if (this.replaying || this.silentInReplay.size === 0) return;
    const silent = [...this.silentInReplay].sort((a, b) => a - b);
    this.silentInReplay.clear();
    for (const input of silent) this.merge.leaveOut(input);
    this.operator.processMerged(this.merge.release());
  }

  takeReady(): StepResult<R>[] {
    return this.operator.takeReady(false);
  }

  /** A flush is refused over several inputs (the builder's `flush` check): nothing to flush. */
  readonly canFlush = false;

  flush(): void {
    // Never asked: `canFlush` is false and the builder refuses a flush over several inputs.
  }

  /** An operator's skip request names one source: a job over several inputs has none. */
  skipThrough(): void {
    // Never applied: the runner reads no skip request for a job over several inputs.
  }
}
