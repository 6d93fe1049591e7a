import { createMessageScan, scanMessage } from '../codecs/message-scan.js';
import { MultiSectionMessageError, type ProcessingStage } from '../common/errors.js';
import type { Key } from '../common/keyed-output.js';
import type { SourceChunk } from '../ports/ports.js';
import type { MessageValuesDecoder } from '../result-format/results-source.js';
import type { BodyDecoder } from '../api/value-decoder.js';
import type { ValueStage } from './value-stage.js';
import { messageAt } from '../ports/chunk-message.js';
import { decodeFailure } from '../result-format/result-decoder.js';
import type { EventTimeWindowSpec } from '../windows/event-time-spec.js';
import { MAX_EVENT_TIME, type EventTimeRange } from '../windows/event-time-range.js';
import type { WindowSpec } from '../windows/window-spec.js';

/** What became of a message the reader read. */
export const enum ReadOutcome {
  /** `value`, `time` and `key` (or `values`, `times`, `keys`) hold what it gave. */
  Read = 0,
  /** The job's `.filter()` refused it. */
  Filtered = 1,
  /** A stage threw: `stage` and `cause` say which and what. */
  Rejected = 2,
}

export interface MessageReaderConfig<T> {
  readonly decode: BodyDecoder<unknown>;
  readonly stages: readonly ValueStage[];
  readonly eventTime: ((value: T) => number | Date) | undefined;
  readonly key: ((value: T) => string | number) | undefined;
  /** The job's windows, named when an event time they cannot hold is refused. */
  readonly window: WindowSpec | EventTimeWindowSpec;
}
const NO_VALUES: readonly never[] = [];

/**
 * The part of the hot path both processors share (the step processor and the window operator):
 * a source message through decode → filter/map → event time → key. Results land in the
 * reader's own fields rather than a fresh object per message, so reading allocates nothing
 * beyond the decoded value.
 */
export class MessageReader<T> {
  value = undefined as T;
  time = 0;
  key: Key = null;
  stage: ProcessingStage = 'decode';
  cause: unknown;
  /**
   * A multi-value message's values (the decoder's own array, fresh per message and not kept
   * past it: no copy), their keys and (when asked) their event times.
   */
  values: readonly T[] = NO_VALUES;
  readonly keys: Key[] = [];
  readonly times: number[] = [];
  /** A multi-value message's values counted rather than aggregated. */
  counted = 0;
  private readonly scan = createMessageScan();

  /** `range`: the event times its windows take, its processor's choice. */
  constructor(
    private readonly config: MessageReaderConfig<T>,
    private readonly range: EventTimeRange,
  ) {}

  /** Reads message `index` of `chunk` (whose bytes are `bytes`) into `value`, `time`, `key`. */
  read(chunk: SourceChunk, bytes: Buffer, index: number): ReadOutcome {
    const { config, scan } = this;
    this.stage = 'decode';
    try {
      scanMessage(bytes, chunk.starts[index] as number, chunk.ends[index] as number, scan);
      // One value per message: never the first section of several, silently.
      if (scan.dataSections > 1) throw new MultiSectionMessageError(scan.dataSections);
      let decoded = config.decode(bytes, scan.bodyStart, scan.bodyEnd);
      const { stages } = config;
      for (let i = 0; i < stages.length; i++) {
        const { kind, fn } = stages[i] as ValueStage;
        this.stage = kind;
        if (kind === 'map') {
          decoded = fn(decoded);
        } else if (!fn(decoded)) {
          return ReadOutcome.Filtered;
        }
      }
      const value = decoded as T;
      this.value = value;
      this.stage = 'event-time';
      this.time = this.eventTimeOf(
        value,
        Number.isNaN(scan.creationTime) ? chunk.timestamp : scan.creationTime,
      );
      this.key = null;
      if (config.key !== undefined) {
        this.stage = 'key';
        this.key = checkKey(config.key(value));
      }
    } catch (cause) {
      this.cause = this.stage === 'decode' ? decodeFailure(cause, messageAt(chunk, index)) : cause;
      return ReadOutcome.Rejected;
    }
    return ReadOutcome.Read;
  }

  /**
   * Reads a message of several values (a result of another job) into `values`, `keys` and
   * `times`: with `everyTime`, each value's event time; else only the first value's, which
   * places the whole message (its values share one offset).
   */
  readAll(
    chunk: SourceChunk,
    index: number,
    readValues: MessageValuesDecoder<T>,
    everyTime: boolean,
  ): ReadOutcome {
    const { config, keys, times } = this;
    keys.length = 0;
    times.length = 0;
    this.values = NO_VALUES;
    this.stage = 'decode';
    try {
      // A copy, as readResults makes: values (binary ones, passed-on dead letters) may be
      // views of the bytes they came from, and must not pin the broker's chunk buffer.
      const read = readValues(messageAt(chunk, index));
      const { values } = read;
      this.values = values;
      this.counted = read.counted;
      this.stage = 'event-time';
      const timed = everyTime ? values.length : Math.min(values.length, 1);
      for (let i = 0; i < timed; i++) {
        times.push(this.eventTimeOf(values[i] as T, read.times[i] ?? chunk.timestamp));
      }
      if (config.key !== undefined) {
        this.stage = 'key';
        for (const value of values) keys.push(checkKey(config.key(value)));
      }
    } catch (cause) {
      this.cause = cause;
      return ReadOutcome.Rejected;
    }
    return ReadOutcome.Read;
  }

  /** The event time of `value`: the job's extractor's, else the message's `defaultTime`. */
  private eventTimeOf(value: T, defaultTime: number): number {
    const extractor = this.config.eventTime;
    const time = extractor !== undefined ? extractor(value) : defaultTime;
    const millis = time instanceof Date ? time.getTime() : time;
    if (typeof millis !== 'number' || Number.isNaN(millis)) {
      throw new TypeError(
        `event time must be epoch milliseconds within ±${MAX_EVENT_TIME} or a valid Date, got ${String(time)}`,
      );
    }
    // Whole milliseconds: window bounds taken from event times (count, session) stay integers.
    const whole = Math.floor(millis);
    // Within Date's range, and with every window of the time within it and closable by the
    // watermark: window arithmetic is exact there, and calendar windows need it. A creation
    // time in micro- or nanoseconds by mistake lands here too.
    if (!this.range.takes(whole)) {
      throw new RangeError(
        `event time ${String(time)} has a window of ${this.config.window.describe()} that ${this.range.rule}`,
      );
    }
    return whole;
  }
}

function checkKey(key: unknown): string | number {
  if (typeof key === 'string' || (typeof key === 'number' && Number.isFinite(key))) return key;
  throw new TypeError(
    `key must be a string or a finite number, got ${typeof key === 'number' ? key : typeof key}`,
  );
}
