import { ConfigError } from '../common/errors.js';
import { MemoryConsumer } from './consumer.js';
import { StreamNotFoundError } from './errors.js';
import { FaultPlan, type Fault, type FaultSpec } from './faults.js';
import type { OffsetSpec } from './offset-spec.js';
import { MemorySource } from './source.js';
import { toStoredChunk, type StoredChunk, type StoredMessage } from './stored-chunk.js';
import { StreamLog } from './stream-log.js';
import { MemoryTarget } from './target.js';
import { DEFAULT_FRAME_MAX, maxWriteBytes } from '../core/write-size.js';

export interface MemoryBrokerOptions {
  /** Clock for chunk timestamps, epoch ms. Default `Date.now`; inject one for replayable tests. */
  readonly now?: () => number;
  /** RabbitMQ's `stream.frame_max`, bytes; bounds one publish. Default 1,048,576. */
  readonly frameMax?: number;
}

/**
 * In-process RabbitMQ streams, for running jobs in tests and demos the way Kafka Streams users
 * use TopologyTestDriver: same offsets, chunking, deduplication and offset specifications as
 * the real broker, plus fault injection and inspection. Everything is synchronous except
 * what waits for data or confirms.
 */
export class MemoryBroker {
  private readonly streams = new Map<string, StreamLog>();
  private readonly faults = new FaultPlan();
  private readonly now: () => number;
  private readonly maxWriteBytes: number;

  constructor(options: MemoryBrokerOptions = {}) {
    this.now = options.now ?? Date.now;
    const frameMax = options.frameMax ?? DEFAULT_FRAME_MAX;
    this.maxWriteBytes = maxWriteBytes(frameMax);
    if (!Number.isSafeInteger(frameMax) || this.maxWriteBytes < 1) {
      throw new ConfigError(
        'frameMax',
        'must be an integer larger than the frame overhead',
        frameMax,
      );
    }
  }

  /**
   * Creates an empty stream; creating one that exists does nothing. RabbitMQ answers
   * STREAM_ALREADY_EXISTS, which rabbitmq-stream-js-client's createStream turns into success,
   * so this is what a job's setup code sees against the real broker too.
   */
  createStream(name: string): void {
    if (!this.streams.has(name)) this.streams.set(name, new StreamLog(name));
  }

  /** Deletes a stream with its messages and producer table; readers on it stop with `StreamNotFoundError`. */
  deleteStream(name: string): void {
    this.log(name).delete();
    this.streams.delete(name);
  }

  /**
   * Writes `messages` (encoded AMQP 1.0 messages) as ONE chunk, without a producer name and so
   * without deduplication, the way a test feeds a source stream. Returns the first offset.
   */
  append(
    stream: string,
    messages: readonly Uint8Array[],
    options: { timestamp?: number } = {},
  ): bigint {
    if (messages.length === 0) throw new ConfigError('messages', 'must not be empty', []);
    return this.log(stream).append(messages, options.timestamp ?? this.now()).firstOffset;
  }

  /**
   * Retention, as RabbitMQ applies max-age or max-length: removes the chunks all of whose
   * offsets are below `beforeOffset` (whole chunks from the head, like segments; the chunk
   * holding `beforeOffset` stays). Reading a removed offset then fails with
   * `RetentionGapError`; `'first'` starts at the first offset still stored. The producer
   * table stays, as osiris keeps it across segments. Returns that first offset.
   */
  truncate(stream: string, beforeOffset: bigint): bigint {
    if (typeof beforeOffset !== 'bigint' || beforeOffset < 0n) {
      throw new ConfigError('beforeOffset', 'must be a bigint >= 0', beforeOffset);
    }
    const log = this.log(stream);
    log.truncate(beforeOffset);
    return log.firstOffset;
  }

  /** A deduplicating test producer: the same as `target(stream, { producer: name })`, named for feeding streams. */
  producer(stream: string, name: string): MemoryTarget {
    return this.target(stream, { producer: name });
  }

  /** The port a job publishes through; one per job run (a crash fault kills it). */
  target(stream: string, options: { producer: string }): MemoryTarget {
    return new MemoryTarget(
      this.log(stream),
      options.producer,
      this.maxWriteBytes,
      this.faults,
      this.now,
    );
  }

  /** The port a job reads through. */
  source(stream: string): MemorySource {
    return new MemorySource(this.log(stream));
  }

  /** A user-level consumer from `spec`, delivering chunks until `signal` aborts. */
  consumer(stream: string, spec: OffsetSpec, signal: AbortSignal): MemoryConsumer {
    return new MemoryConsumer(this.log(stream), spec, signal);
  }

  /** Every stored chunk, oldest first, with copies of its messages. */
  chunks(stream: string): StoredChunk[] {
    return this.log(stream).chunks.map((chunk) => toStoredChunk(chunk, chunk.writer));
  }

  /** Every stored message, in offset order. */
  messages(stream: string): StoredMessage[] {
    return this.chunks(stream).flatMap((chunk) => chunk.messages);
  }

  /** Arms a fault; see `FaultSpec`. */
  injectFault(spec: FaultSpec): Fault {
    return this.faults.add(spec);
  }

  /** Disarms every fault that has not fired. */
  clearFaults(): void {
    this.faults.clear();
  }

  private log(name: string): StreamLog {
    const log = this.streams.get(name);
    if (log === undefined) throw new StreamNotFoundError(name);
    return log;
  }
}
