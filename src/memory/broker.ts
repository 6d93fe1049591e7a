import { ConfigError } from '../common/errors.js';
import { partitionFor } from '../common/partition-routing.js';
import { checkReference, checkStreamName } from '../common/stream-protocol.js';
import { ConfirmHolds } from './confirm-holds.js';
import { DeclaredProducers } from './declared-producers.js';
import { MemoryConsumer } from './consumer.js';
import { StreamNotFoundError } from './errors.js';
import { FaultPlan, type Fault, type FaultSpec } from './faults.js';
import type { OffsetSpec } from './offset-spec.js';
import { SingleActiveGroup } from './single-active-group.js';
import { SingleActiveMember, type SingleActiveMemberOptions } from './single-active-member.js';
import { MemorySource } from './source.js';
import { MemoryPartitionedSource } from './super-stream-source.js';
import { SingleActiveSource, type SingleActiveSourceOptions } from './single-active-source.js';
import { toStoredChunk, type StoredChunk, type StoredMessage } from './stored-chunk.js';
import { StreamLog } from './stream-log.js';
import { partitionNames, type SuperStreamLayout } from '../common/super-stream-layout.js';
import { MemoryTarget } from './target.js';
import { DEFAULT_FRAME_MAX, maxWriteBytes } from '../ports/write-size.js';
import {
  StreamProducer,
  checkProducerOptions,
  type ProducerOptions,
} from '../producer/stream-producer.js';

/** The options of `new MemoryBroker(options)`: its clock and its frame size. */
export interface MemoryBrokerOptions {
  /** Clock for chunk timestamps, epoch ms. Default `Date.now`; inject one for replayable tests. */
  readonly now?: () => number;
  /** RabbitMQ's `stream.frame_max`, bytes; bounds one publish. Default 1,048,576. */
  readonly frameMax?: number;
}

/** A single active consumer group as `MemoryBroker.consumerGroup` shows it. */
export interface ConsumerGroupView {
  /** The members, in the order they joined. */
  readonly members: readonly SingleActiveMember[];
  /** The member the broker delivers to; absent while none is active. */
  readonly active?: SingleActiveMember;
  /** The member told to step down that has not answered yet; absent when none is. */
  readonly deactivating?: SingleActiveMember;
}

function groupKey(stream: string, name: string): string {
  return `${stream}\u0000${name}`;
}

/**
 * In-process RabbitMQ streams, for running jobs in tests and demos the way Kafka Streams users
 * use TopologyTestDriver: same offsets, chunking, deduplication and offset specifications as
 * the real broker, plus fault injection and inspection. Everything is synchronous except
 * what waits for data or confirms.
 */
export class MemoryBroker {
  private readonly streams = new Map<string, StreamLog>();
  /** Partition streams of each super stream, in partition order. */
  private readonly superStreams = new Map<string, string[]>();
  /** Each partition stream's index in its super stream (RabbitMQ's x-stream-partition-order). */
  private readonly partitionIndexes = new Map<string, number>();
  /** Single active consumer groups, by stream and group name. */
  private readonly groups = new Map<string, SingleActiveGroup<SingleActiveMember>>();
  private readonly faults = new FaultPlan();
  private readonly holds = new ConfirmHolds();
  private readonly declared = new DeclaredProducers();
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
   * so this is what a job's setup code sees against the real broker too. A name RabbitMQ
   * would not serve is a `ConfigError`, here and at every call naming a stream, as there.
   */
  createStream(name: string): void {
    checkStreamName('stream', name); // a name RabbitMQ would not serve is refused as ours is
    if (!this.streams.has(name)) this.streams.set(name, new StreamLog(name));
  }

  /** Deletes a stream with its messages and producer table; readers on it stop with `StreamNotFoundError`. */
  deleteStream(name: string): void {
    this.log(name).delete();
    this.streams.delete(name);
    // As RabbitMQ drops a deleted partition's binding; the others keep their order.
    this.partitionIndexes.delete(name);
    for (const partitions of this.superStreams.values()) {
      const index = partitions.indexOf(name);
      if (index >= 0) partitions.splice(index, 1);
    }
  }

  /**
   * Creates a super stream and its partition streams (see `SuperStreamLayout`; default
   * `{ partitions: 3 }`) and returns the partitions in order. Creating one that exists does
   * nothing, as `createStream`. A partition name that is already a stream is refused:
   * RabbitMQ refuses to bind an existing stream into a new super stream.
   */
  createSuperStream(name: string, layout: SuperStreamLayout = { partitions: 3 }): string[] {
    const partitions = partitionNames(name, layout);
    const existing = this.superStreams.get(name);
    if (existing !== undefined) return [...existing];
    const taken = partitions.find((partition) => this.streams.has(partition));
    if (taken !== undefined) {
      throw new ConfigError('partitions', 'must not name an existing stream', taken);
    }
    partitions.forEach((partition, index) => {
      this.createStream(partition);
      this.partitionIndexes.set(partition, index);
    });
    this.superStreams.set(name, partitions);
    return [...partitions];
  }

  /** Deletes a super stream and every partition stream it still has. */
  deleteSuperStream(name: string): void {
    for (const partition of this.partitions(name)) this.deleteStream(partition);
    this.superStreams.delete(name);
  }

  /** The partition streams of `superStream` in partition order, as RabbitMQ's Partitions query answers. */
  partitions(superStream: string): string[] {
    checkStreamName('superStream', superStream);
    const partitions = this.superStreams.get(superStream);
    if (partitions === undefined) throw new StreamNotFoundError(superStream);
    return [...partitions];
  }

  /** The partition a routing key goes to, as the Java and JS clients' hash routing picks it. */
  route(superStream: string, routingKey: string): string {
    return partitionFor(routingKey, this.partitions(superStream));
  }

  /**
   * Joins the single active consumer group `options.name` on `stream` (see
   * `SingleActiveGroup` for who is active when, and `SingleActiveMember` for what a member
   * reads). On a partition of a super stream the group follows the partition rule; RabbitMQ
   * applies it when the subscription names its super stream, which this broker knows.
   */
  singleActive(stream: string, options: SingleActiveMemberOptions): SingleActiveMember {
    const log = this.log(stream);
    const key = groupKey(stream, options.name);
    const partitionIndex = this.partitionIndexes.get(stream) ?? -1;
    const group =
      this.groups.get(key) ?? new SingleActiveGroup(stream, options.name, partitionIndex);
    const member = new SingleActiveMember(log, options, (leaving) => {
      group.leave(leaving);
      if (group.members.length === 0 && this.groups.get(key) === group) this.groups.delete(key);
    });
    this.groups.set(key, group);
    group.join(member);
    return member;
  }

  /**
   * Group `name` on `stream`: its members in join order, the active one and the one stepping
   * down, if any (what `rabbitmq-streams list_stream_group_consumers` shows).
   */
  consumerGroup(stream: string, name: string): ConsumerGroupView {
    const group = this.groups.get(groupKey(stream, name));
    return {
      members: [...(group?.members ?? [])],
      ...(group?.active === undefined ? {} : { active: group.active }),
      ...(group?.deactivating === undefined ? {} : { deactivating: group.deactivating }),
    };
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

  /**
   * A producer writing to `stream` as `rabbit.producer` does (see `StreamProducer`): for
   * feeding a job's source in demos and tests. Fails with `StreamNotFoundError` when there is
   * no such stream.
   */
  producer(stream: string, options: ProducerOptions = {}): StreamProducer {
    checkProducerOptions(options);
    // The embedded broker stores and confirms each write at once (unless `holdConfirms`).
    return new StreamProducer(this.publisher(stream, options.name ?? ''), options, this.now);
  }

  /**
   * The port a job publishes through (a crash fault kills it). Its producer is declared over
   * `connection` (default 'default') at its first publish and released when the job's `run()`
   * ends: as on RabbitMQ, a second target of one name on one stream over one connection is
   * refused (`PublishError` code 17, precondition failed) while the first is declared. Name a
   * connection per simulated process for instances of one job running at once.
   */
  target(stream: string, options: { producer: string; connection?: string }): MemoryTarget {
    checkReference('producer', options.producer);
    if (options.producer.length === 0) {
      throw new ConfigError('producer', 'must be a non-empty string', options.producer);
    }
    const { connection = 'default' } = options;
    if (typeof connection !== 'string' || connection === '') {
      throw new ConfigError('connection', 'must be a non-empty string', connection);
    }
    return this.publisher(stream, options.producer, { producers: this.declared, connection });
  }

  /** A publisher on `stream` under `producer`; '' is unnamed (no deduplication). */
  private publisher(
    stream: string,
    producer: string,
    declarations?: ConstructorParameters<typeof MemoryTarget>[6],
  ): MemoryTarget {
    return new MemoryTarget(
      this.log(stream),
      producer,
      this.maxWriteBytes,
      this.faults,
      this.holds,
      this.now,
      declarations,
    );
  }

  /**
   * The port a job reads through. With `singleActive`, the job's reads join that single
   * active consumer group on `stream` (see `SingleActiveSource`): only the active instance
   * delivers, it starts where the job's resume point is at its activation, and a step-down
   * fails its read with `SourceDeactivatedError`, answered once the job's confirms landed.
   */
  source(stream: string): MemorySource;
  source(stream: string, options: { singleActive: SingleActiveSourceOptions }): SingleActiveSource;
  source(
    stream: string,
    options: { singleActive?: SingleActiveSourceOptions } = {},
  ): MemorySource | SingleActiveSource {
    const log = this.log(stream);
    if (options.singleActive === undefined) return new MemorySource(log);
    return new SingleActiveSource(log, options.singleActive, (member) =>
      this.singleActive(stream, member),
    );
  }

  /**
   * A super stream as a partitioned job reads it (`aggregate(...).toPartitions(...)`): one
   * source per partition; with `singleActive`, every partition's source joins that group, so
   * instances of the job share the partitions by RabbitMQ's `index rem size` rule.
   */
  superStreamSource(
    superStream: string,
    options: { singleActive?: SingleActiveSourceOptions } = {},
  ): MemoryPartitionedSource {
    this.partitions(superStream); // fails now if it does not exist
    return new MemoryPartitionedSource(superStream, options.singleActive, {
      partitions: (name) => this.partitions(name),
      source: (stream, singleActive) =>
        singleActive === undefined ? this.source(stream) : this.source(stream, { singleActive }),
    });
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

  /**
   * Holds back the confirms of writes to `stream`, as a slow broker does: they are stored when
   * published (readers see them), and their publishes resolve only once the returned function
   * releases them. For testing what waits on confirms, such as a producer's `maxInFlight`.
   */
  holdConfirms(stream: string): () => void {
    this.log(stream);
    return this.holds.hold(stream);
  }

  /** Every call naming a stream comes here: a bad name is a ConfigError, as on RabbitMQ. */
  private log(name: string): StreamLog {
    checkStreamName('stream', name);
    const log = this.streams.get(name);
    if (log === undefined) throw new StreamNotFoundError(name);
    return log;
  }
}
