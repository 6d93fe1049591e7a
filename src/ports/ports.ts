/**
 * What a broker adapter provides to the engine. Nothing here knows about windows:
 * the embedded broker (src/memory) and the RabbitMQ adapter (src/rabbitmq) implement
 * these ports, and the runner (src/engine/runner.ts) is their only user.
 */

/**
 * A run of consecutive source messages as the broker stored them (one stream chunk,
 * or the part of it at or after the requested offset).
 *
 * Messages are delivered as slices of one backing buffer rather than one object per
 * message, so an adapter can hand over a chunk without copying and the runner's hot
 * loop allocates nothing per message beyond the decoded value.
 */
export interface SourceChunk {
  /** Offset of message 0 of this chunk; message i has offset `firstOffset + BigInt(i)`. */
  readonly firstOffset: bigint;
  /** Broker timestamp of the chunk, epoch milliseconds. Stored in the stream, so stable on replay. */
  readonly timestamp: number;
  /** Number of messages in this chunk. */
  readonly count: number;
  /** Backing bytes. Message i is the AMQP 1.0 bare message `bytes[starts[i], ends[i])`. */
  readonly bytes: Uint8Array;
  /** Where message i starts in `bytes`, for i below `count`. */
  readonly starts: Uint32Array;
  /** Where message i ends in `bytes` (exclusive), for i below `count`. */
  readonly ends: Uint32Array;
}

/** Where a read starts: an offset, the first offset still stored, or asked when reading may begin. */
export type ReadStart = bigint | 'first' | (() => Promise<bigint | 'first'>);

/** What a single active consumer source tells its reader about its group membership. */
export interface GroupObserver {
  /**
   * The broker registered this reader in consumer group `group` (or kept it there after a
   * step-down): it stands by, reading nothing, until the broker activates it (then `from` is
   * asked). Called once per read, before `from` is asked.
   */
  standby(group: string): void;
}

/** What a job reads from: one stream, read in chunks from a resume point (a broker adapter implements it). */
export interface Source {
  /** The name of the stream it reads (a partition's, for a partition of a super stream). */
  readonly stream: string;
  /**
   * The single active consumer group this source reads in (only the group's active member is
   * delivered chunks); absent when it is read without one. An idle flush needs one: see
   * `FlushOptions.oneInstance`.
   */
  readonly group?: string | undefined;
  /**
   * Reads the stream from `from` (inclusive) in offset order until `signal` aborts. Chunks
   * never contain messages before `from`. If retention already removed `from`, this fails
   * with a non-retriable SourceError rather than skip the gap. `'first'` reads from the first
   * offset the stream still holds, whatever it is.
   *
   * `from` as a function is asked once, when delivery may begin: at once for a plain source;
   * for a single-active-consumer source (`singleActive`), when the broker makes this reader
   * the active one of its group, which may be much later. The runner passes a function that
   * reads the target's resume point at that moment.
   *
   * A single-active-consumer source the broker tells to step down stops delivering at once
   * (chunks it holds are dropped) and fails the iteration with a retriable
   * `SourceDeactivatedError`; it answers the broker only when `signal` aborts. The runner
   * aborts it after the confirms under way have landed, so the next active reader, which
   * reads the resume point once activated, sees every result this one published.
   *
   * A single active source tells `group` when it stands by in its group; others ignore it.
   */
  read(from: ReadStart, signal: AbortSignal, group?: GroupObserver): AsyncIterable<SourceChunk>;
  /** Offset one past the last message a reader is currently delivered (0 for an empty stream). */
  endOffset(): Promise<bigint>;
  /**
   * The offset stored on this stream under `reference` by server-side offset tracking
   * (RabbitMQ's StoreOffset and QueryOffset); undefined when none was. The runner asks for
   * an operator's skip request (./skip-request.ts) at every (re)start. A source without it
   * has no skip requests.
   */
  storedOffset?(reference: string): Promise<bigint | undefined>;
  /** Stores `offset` under `reference` (the runner records where a message stopped the job). */
  storeOffset?(reference: string, offset: bigint): Promise<void>;
  /**
   * The broker timestamp (epoch ms) of the chunk that holds `offset`; undefined when the stream
   * holds no such offset (removed by retention, or not written yet). A restart asks it of its
   * last publishing id, to tell the target when that result was written at the earliest (see
   * `ResultWhere`); read without joining any consumer group. A source without it gives no such
   * bound: its restarts search as without one.
   */
  timestampAt?(offset: bigint): Promise<number | undefined>;
}

/** What a restart knows of where its result lies, for `Target.readResult`: never trusted, only a place to look first. */
export interface ResultWhere {
  /**
   * When the result was written at the earliest, asked only when the target's own hint did not
   * answer (on RabbitMQ the question is a read of the source): a broker time (epoch ms) by chunk
   * timestamps, undefined when unknown. A result under publishing id p is written after the job
   * read source offset p, so after that offset's chunk was stored. The target reads on from the
   * first chunk stamped at or after it, and searches as without it when the result is not there
   * (a clock skewed or stepped back, a source of another job): it changes the cost, never the
   * answer.
   */
  readonly writtenAfterMs?: () => Promise<number | undefined>;
}

/** What a job writes to: one stream under a named producer, with the broker's deduplication (a broker adapter implements it). */
export interface Target {
  /** The name of the stream it writes to (the super stream's, for a super-stream target). */
  readonly stream: string;
  /** Named producer: the broker deduplicates on it. Stable across restarts, unique per target. */
  readonly producer: string;
  /**
   * The broker node its writes go to now, for reports (on a RabbitMQ cluster, the stream's
   * leader); absent where there is no such thing (the embedded broker), undefined while not
   * connected.
   */
  readonly node?: { readonly host: string; readonly port: number } | undefined;
  /**
   * Highest publishing id stored for `producer`; 0 when the name is unknown. Answering
   * re-arms a target fenced by a failed publish (see `publish`). Rejects with a typed error
   * whose `retriable` tells a passing refusal (stream not available, connection lost) from a
   * final one (stream does not exist).
   */
  lastPublishingId(): Promise<bigint>;
  /**
   * Highest publishing id stored on this stream for another producer name, as
   * `lastPublishingId()` answers for `producer` (0 when the name is unknown), without
   * declaring it and without re-arming the fence. A partitioned job's loop asks it at a start
   * whose own last id is 0, for the name an earlier version derived (ProducerRenamedError, see
   * `.toPartitions()`); a target without it is not checked that way, and its loop logs a
   * warning once. A wrapper of a target (one that counts, delays or fails calls) must forward
   * it, or it turns that check off.
   */
  lastPublishingIdOf?(producer: string): Promise<bigint>;
  /**
   * Whether `producer` ever stored a write on this stream. Settles what a last publishing id
   * of 0 cannot: "never published" or "published offset 0". The runner asks only when
   * `lastPublishingId()` answered 0 and either the source's first offset still stored is
   * above 1 (retention removed its head: where to resume) or a result for offset 0 is about
   * to be published (whether the broker will discard it: `RunSummary.duplicates`); at most
   * once each per resume, so it may cost a scan of the stream.
   */
  hasPublished(): Promise<boolean>;
  /**
   * The stored result of `producer` published under `publishingId`: the whole AMQP 1.0
   * message whose `sw-last-offset` application property is `publishingId` (as a decimal
   * string) and whose `sw-producer` is `producer`; undefined when there is none (never
   * published, or removed by retention). A 'batch' result is several messages, each with the
   * step's properties: this answers its first part. Messages that are not AMQP 1.0, or are
   * another producer's, are skipped.
   *
   * The runner asks once per (re)start, with the last publishing id: it is how an event-time
   * job reads its recovery state, and how any job checks that its producer's last result was
   * written by its own definition (`sw-job`). Cost: both brokers first look where `producer`'s
   * latest result lies, by a hint they keep (RabbitMQ's target with server-side offset
   * tracking, the embedded broker in its log); a hint is checked by the result's properties,
   * never trusted, so it changes the cost, not the answer. Without a usable one, the stream is
   * searched backward from its end, and one producer's results lie in increasing id order, so
   * the search stops at the wanted result or at an earlier result of `producer`. It reads
   * about as many messages as lie after the wanted result (within a factor the implementation
   * documents), whatever other producers share the stream; a producer whose result is absent
   * and that never published before it costs a read of the whole stream.
   *
   * `where.writtenAfterMs` (the runner's question for its last source message's chunk timestamp
   * less a margin for clock skew) bounds where the result can be: asked only without a stored
   * hint that answers, then the target reads on from the first chunk stamped at or after it, so the cost is what was written
   * between that time and the result, whatever came after; then it searches as above.
   */
  readResult(publishingId: bigint, where?: ResultWhere): Promise<Uint8Array | undefined>;
  /**
   * Publishes one write under one publishing id and resolves when the broker confirms it
   * (a duplicate id is confirmed and discarded by the broker).
   *
   * `messages` holds encoded AMQP 1.0 messages: one element is published as a plain
   * message; several are published as ONE sub-entry batch (each inner message gets its
   * own offset, the batch one publishing id).
   *
   * Rejects with a `PublishError`; `retriable` tells whether re-running from the resume
   * point may succeed (connection lost, confirm timed out) or not (stream deleted, access
   * refused).
   *
   * The fence: after any failed publish (whatever the error, a confirm timeout and a
   * publish lost with its connection included) or the broker dropping the producer (its
   * stream deleted, restarted or moved), `publish` refuses, with a
   * retriable `PublishError` and without sending anything, until `lastPublishingId()` has
   * been asked again. A later write sent past a failed one could be stored without it, and
   * the broker would then discard the failed one as a duplicate when the job resumes. The
   * runner keeps to this by reading the resume point at every (re)start.
   *
   * `routingKey` is the step's key from the job's `route` option: a super-stream target
   * (`superStreamTarget`) picks the partition by it; a target on one stream ignores it.
   */
  publish(
    publishingId: bigint,
    messages: readonly Uint8Array[],
    routingKey?: string,
  ): Promise<void>;
  /**
   * Largest write the broker accepts, as `writeSize` (src/ports/write-size.ts) counts it:
   * RabbitMQ's frame_max less the publish frame's own bytes.
   */
  readonly maxWriteBytes: number;
  /**
   * Removes the producer from the broker and keeps the target usable: it is declared again by
   * the next publish (after `lastPublishingId()`, as after any fence). The runner calls it
   * whenever `run()` ends: RabbitMQ refuses a second producer of one name on one stream over
   * one connection while the first is declared (precondition failed, code 17), so a job built
   * again on the same connection could not publish. A target without it keeps its producer
   * until it is closed; a wrapper of a target must forward it.
   */
  release?(): Promise<void>;
}

/**
 * A super stream as a partitioned job reads it: one `Source` per partition, in the order the
 * broker's Partitions query answers (a partition's index in it is its index in the super
 * stream). A partitioned job runs one read-process-write loop per partition.
 */
export interface PartitionedSource {
  /** The super stream's name. */
  readonly superStream: string;
  /**
   * The single active consumer group every partition source joins (the same name on every
   * partition, so the broker spreads partitions over instances by `index rem size`); absent
   * when the partitions are read without one. A partitioned job's name defaults to it.
   */
  readonly group: string | undefined;
  /** The partitions' sources, asked once per run of the job. */
  partitions(): Promise<readonly Source[]>;
  /** Leaves every group the partition sources joined; a later run joins again. */
  close(): Promise<void>;
}
