import { ConfigError, PublishError } from '../common/errors.js';
import { checkReference } from '../common/stream-protocol.js';
import type { Target } from '../ports/ports.js';
import { jsonMessage } from '../codecs/source-message.js';
import { plainEntriesFit, writeRefusal, writeSize } from '../ports/write-size.js';
import { jsonText } from '../common/json-text.js';

/** The options of `broker.producer(stream, options)`: the producer name, sends in flight and the confirm timeout. */
export interface ProducerOptions {
  /**
   * Producer name: the broker deduplicates on it (a publishing id not greater than the last
   * one stored under the name is confirmed and not stored again). Stable across restarts,
   * one writer at a time. Absent: no deduplication, and no publishing ids to give.
   */
  readonly name?: string;
  /** Messages awaiting their confirm at once; `send` waits for a slot beyond. Default 64. */
  readonly maxInFlight?: number;
  /** A message not confirmed within this long rejects (retriable). Default 30 s. */
  readonly confirmTimeoutMs?: number;
}

/** The options of `producer.send(value, options)`: the message's publishing id and creation time. */
export interface SendOptions {
  /**
   * The message's publishing id, named producers only: it must be above every id this
   * producer sent before for the message to be stored (a resent id is confirmed and
   * discarded). Default: one above the last id sent, or, first, above the broker's last
   * publishing id for the name.
   */
  readonly publishingId?: bigint;
  /**
   * For a value sent as JSON: its creation time, the job's default event time. Default: now.
   */
  readonly creationTime?: number | Date;
}

/** One message under its own publishing id, as a producer's batch holds it. */
export interface ProducerEntry {
  readonly publishingId: bigint;
  readonly message: Uint8Array;
}

/** What a producer writes through: a broker's target port, and how to let it go if any. */
export interface ProducerTarget extends Pick<Target, 'stream' | 'publish' | 'lastPublishingId'> {
  /** Largest single write (see `maxWriteBytes`). */
  readonly maxWriteBytes: number;
  /**
   * Several messages, each under its own id, in one write to the broker (one Publish frame),
   * each settling with its own confirm; without it, each message is its own publish.
   */
  publishEach?(entries: readonly ProducerEntry[]): Promise<void>[];
  close?(): Promise<void>;
}

/** A send waiting for its turn to be written. */
interface Queued {
  readonly message: Uint8Array;
  readonly given: bigint | undefined;
  readonly resolve: (publishingId: bigint) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Puts messages on a stream, each under its own publishing id, confirmed one by one: the
 * way into a job's source. Both brokers hand it out (`broker.producer(stream, options)`,
 * `rabbit.producer(stream, options)`) over their target port, which orders the writes and
 * refuses everything after a failed one until the resume point is read again; this producer
 * reads it again before its next write.
 *
 * At most `maxInFlight` messages are unconfirmed; sends beyond wait in memory, in call order,
 * and go out together, several per frame, as soon as confirms free room.
 */
export class StreamProducer {
  /** The stream it writes to. */
  readonly stream: string;
  /** The producer name the broker deduplicates on; undefined: no deduplication. */
  readonly name: string | undefined;
  private readonly maxInFlight: number;
  /** The next publishing id given by default; undefined until the broker's last id is read. */
  private next: bigint | undefined;
  private readonly queue: Queued[] = [];
  private writing = false;
  private unconfirmed = 0;
  /** Wakes the writer waiting for room (a confirm came). */
  private room: (() => void) | undefined;
  /** Sends failed so far: after one, the target refuses until its resume point is read again. */
  private failures = 0;
  /** `failures` when the resume point was last read. */
  private resumedAfter = 0;
  private closed = false;
  private readonly outstanding = new Set<Promise<unknown>>();

  /** `options` as `producer()` was given them, checked there (`checkProducerOptions`). */
  constructor(
    private readonly target: ProducerTarget,
    options: ProducerOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.stream = target.stream;
    this.name = options.name;
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.next = this.name === undefined ? 1n : undefined;
  }

  /**
   * Writes one message and resolves with its publishing id once the broker confirmed it.
   * `message` is either an encoded AMQP 1.0 message (`jsonMessage`, `sourceMessage`), written
   * as it is, or any other value, written as `jsonMessage(value, { creationTime })`: a JSON
   * body, the job's default decoding. Beyond `maxInFlight` unconfirmed messages it waits
   * before writing. Rejects with a `PublishError` (stream, publishing id, cause;
   * `retriable` when sending it again may succeed) or a `ResumePointError` (no such stream).
   */
  send(message: unknown, options: SendOptions = {}): Promise<bigint> {
    if (this.closed) {
      return Promise.reject(
        new ConfigError('send', `after close (stream '${this.stream}')`, message),
      );
    }
    let bytes: Uint8Array;
    try {
      bytes = this.encode(message, options);
      this.checkId(options.publishingId);
    } catch (error) {
      return Promise.reject(error);
    }
    const sent = new Promise<bigint>((resolve, reject) =>
      this.queue.push({ message: bytes, given: options.publishingId, resolve, reject }),
    );
    this.outstanding.add(sent);
    void sent.then(
      () => this.outstanding.delete(sent),
      () => this.outstanding.delete(sent),
    );
    void this.write();
    return sent;
  }

  /**
   * Waits for every message sent so far to be confirmed or to fail, then removes the
   * producer from the broker. Later sends reject.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.outstanding]);
    await this.target.close?.();
  }

  /**
   * Writes what is queued, in order, as room allows: one batch per write, as many queued
   * messages as there is room for and one frame holds. Runs once at a time.
   */
  private async write(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      // Yields first, so that sends made together go out together.
      while (this.queue.length > 0) {
        try {
          await this.resume();
        } catch (error) {
          for (const queued of this.queue.splice(0)) queued.reject(error);
          return;
        }
        while (this.unconfirmed >= this.maxInFlight) {
          await new Promise<void>((resolve) => (this.room = resolve));
        }
        if (!this.refusedHead()) this.publish(this.takeBatch());
      }
    } finally {
      this.writing = false;
    }
  }

  /**
   * Refuses the queue's head if it is too large for any write, under the id it would have
   * had, without handing it to the target: refused there, it would fence the target and so
   * fail the writes before it that wait to be sent.
   */
  private refusedHead(): boolean {
    const head = this.queue[0];
    if (head === undefined || writeSize([head.message]) <= this.target.maxWriteBytes) {
      return false;
    }
    this.queue.shift();
    const id = this.idFor(head.given);
    const refusal = writeRefusal(id, [head.message], this.target.maxWriteBytes);
    head.reject(new PublishError(this.stream, id, false, refusal?.reason ?? '', refusal?.code));
    return true;
  }

  /** The next batch: the queue's head, and what follows while room and one frame allow. */
  private takeBatch(): Queued[] {
    const room = this.maxInFlight - this.unconfirmed;
    const lengths: number[] = [];
    for (const queued of this.queue) {
      if (lengths.length === room) break;
      lengths.push(queued.message.length);
      if (lengths.length > 1 && !plainEntriesFit(lengths, this.target.maxWriteBytes)) {
        lengths.pop();
        break;
      }
    }
    return this.queue.splice(0, lengths.length);
  }

  private publish(batch: readonly Queued[]): void {
    const entries = batch.map((queued) => ({
      publishingId: this.idFor(queued.given),
      message: queued.message,
    }));
    const confirms =
      this.target.publishEach?.(entries) ??
      entries.map((entry) => this.target.publish(entry.publishingId, [entry.message]));
    this.unconfirmed += entries.length;
    confirms.forEach((confirmed, i) => {
      const queued = batch[i];
      const entry = entries[i];
      if (queued === undefined || entry === undefined) return;
      void confirmed.then(
        () => this.settled(() => queued.resolve(entry.publishingId)),
        (error: unknown) =>
          this.settled(() => {
            this.failures++;
            queued.reject(error);
          }),
      );
    });
  }

  private settled(outcome: () => void): void {
    this.unconfirmed--;
    outcome();
    const room = this.room;
    this.room = undefined;
    room?.();
  }

  private idFor(given: bigint | undefined): bigint {
    // The assertion is needed (tsc fails without it: the rule misreads the right of `??`);
    // next is set by then: from 1n unnamed, by resume() named (it runs before sending).
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- see above
    const id = given ?? (this.next as bigint);
    if (this.next === undefined || id >= this.next) this.next = id + 1n;
    return id;
  }

  /**
   * Before the first send of a named producer, and after a failed send: reads the broker's
   * last publishing id for the name (which re-arms the target) and gives ids above it.
   */
  private async resume(): Promise<void> {
    if (this.next !== undefined && this.failures === this.resumedAfter) return;
    const failures = this.failures;
    const last = await this.target.lastPublishingId();
    // A failure while the answer was on its way may have fenced the target again.
    this.resumedAfter = failures;
    if (this.name !== undefined && (this.next === undefined || last >= this.next)) {
      this.next = last + 1n;
    }
  }

  private encode(message: unknown, options: SendOptions): Uint8Array {
    if (message instanceof Uint8Array) return message;
    if (jsonText(message) === undefined) {
      throw new ConfigError('message', `has no JSON form (stream '${this.stream}')`, message);
    }
    return jsonMessage(message, { creationTime: options.creationTime ?? this.now() });
  }

  private checkId(publishingId: bigint | undefined): void {
    if (publishingId === undefined) return;
    if (this.name === undefined) {
      throw new ConfigError(
        'publishingId',
        `needs a named producer, which deduplicates on it (stream '${this.stream}')`,
        publishingId,
      );
    }
    if (typeof publishingId !== 'bigint' || publishingId < 0n || publishingId >= 2n ** 64n) {
      throw new ConfigError('publishingId', 'must be a bigint from 0 to 2^64 - 1', publishingId);
    }
  }
}

const DEFAULT_MAX_IN_FLIGHT = 64;

/**
 * A producer's options as both brokers take them: a name non-empty and at most 255 UTF-8
 * bytes, `maxInFlight` a positive integer.
 */
export function checkProducerOptions(options: ProducerOptions): void {
  const { name, maxInFlight } = options;
  if (maxInFlight !== undefined && (!Number.isInteger(maxInFlight) || maxInFlight < 1)) {
    throw new ConfigError('maxInFlight', 'must be a positive integer', maxInFlight);
  }
  if (name === undefined) return;
  if (typeof name !== 'string' || name.length === 0) {
    throw new ConfigError(
      'name',
      'must be a non-empty string (omit it for no deduplication)',
      name,
    );
  }
  checkReference('name', name);
}
