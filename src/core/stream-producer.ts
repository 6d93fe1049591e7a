import { ConfigError } from '../common/errors.js';
import { checkReference } from '../common/stream-protocol.js';
import type { Target } from './ports.js';
import { jsonMessage } from './source-message.js';

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

/** What a producer writes through: a broker's target port, and how to let it go if any. */
export interface ProducerTarget extends Pick<Target, 'stream' | 'publish' | 'lastPublishingId'> {
  close?(): Promise<void>;
}

/**
 * Puts messages on a stream, each under its own publishing id, confirmed one by one: the
 * way into a job's source. Both brokers hand it out (`broker.producer(stream, options)`,
 * `rabbit.producer(stream, options)`) over their target port, which bounds what is in flight
 * (`maxInFlight`), orders the writes and refuses everything after a failed one until the
 * resume point is read again; this producer reads it again before its next send.
 */
export class StreamProducer {
  readonly stream: string;
  /** The next publishing id given by default; undefined until the broker's last id is read. */
  private next: bigint | undefined;
  /** Sends reach the target one after another, in call order (their ids must increase). */
  private turn: Promise<void> = Promise.resolve();
  /** A send failed: the target refuses until its resume point is read again. */
  private failed = false;
  private closed = false;
  private readonly outstanding = new Set<Promise<unknown>>();

  constructor(
    private readonly target: ProducerTarget,
    readonly name: string | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.stream = target.stream;
    this.next = name === undefined ? 1n : undefined;
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
      return Promise.reject(new ConfigError('send', `after close (stream '${this.stream}')`, message));
    }
    let bytes: Uint8Array;
    try {
      bytes = this.encode(message, options);
      this.checkId(options.publishingId);
    } catch (error) {
      return Promise.reject(error);
    }
    const sent = this.inTurn(bytes, options.publishingId);
    this.outstanding.add(sent);
    void sent.then(
      () => this.outstanding.delete(sent),
      () => {
        this.failed = true;
        this.outstanding.delete(sent);
      },
    );
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

  /** Hands the write to the target in call order; resolves with its id once confirmed. */
  private inTurn(bytes: Uint8Array, given: bigint | undefined): Promise<bigint> {
    const handed = this.turn.then(async () => {
      await this.resume();
      const id = given ?? (this.next as bigint);
      if (this.next === undefined || id >= this.next) this.next = id + 1n;
      // Called, not awaited: the target takes a slot in call order before its first await.
      return { id, confirmed: this.target.publish(id, [bytes]) };
    });
    this.turn = handed.then(
      () => undefined,
      () => undefined,
    );
    return handed.then(async ({ id, confirmed }) => {
      await confirmed;
      return id;
    });
  }

  /**
   * Before the first send of a named producer, and after a failed send: reads the broker's
   * last publishing id for the name (which re-arms the target) and gives ids above it.
   */
  private async resume(): Promise<void> {
    if (this.next !== undefined && !this.failed) return;
    this.failed = false;
    const last = await this.target.lastPublishingId();
    if (this.name !== undefined && (this.next === undefined || last >= this.next)) {
      this.next = last + 1n;
    }
  }

  private encode(message: unknown, options: SendOptions): Uint8Array {
    if (message instanceof Uint8Array) return message;
    if (JSON.stringify(message) === undefined) {
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

/** A producer name as both brokers take it: non-empty, at most 255 UTF-8 bytes. */
export function checkProducerName(name: string | undefined): void {
  if (name === undefined) return;
  if (typeof name !== 'string' || name.length === 0) {
    throw new ConfigError('name', 'must be a non-empty string (omit it for no deduplication)', name);
  }
  checkReference('name', name);
}
