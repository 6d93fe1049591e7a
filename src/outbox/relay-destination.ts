import { ConfigError } from '../common/errors.js';
import { partitionIndexFor } from '../common/partition-routing.js';
import { decodeApplicationProperties } from '../codecs/amqp-message.js';
import type { Target } from '../ports/ports.js';
import type { ProducerTarget } from '../producer/stream-producer.js';
import { outboxMessage, OutboxProperty } from './outbox-message.js';
import type { OutboxRecord } from './outbox-table.js';

/** What a relay publishes through: a broker connection that makes named-producer targets (`connect()`'s, or the embedded broker). */
export interface RelayBroker {
  /** The target of `stream` under the named producer `options.producer`. */
  target(stream: string, options: { producer: string }): RelayTarget;
  /** The partition streams of `superStream`, in the broker's order (a relay `toSuperStream` asks it once). */
  partitions?(superStream: string): readonly string[] | Promise<readonly string[]>;
}

/**
 * A target as a relay uses it: several rows, each under its own id, in one frame where it can;
 * closed when the relay is (the relay made it).
 */
export type RelayTarget = Target & Partial<Pick<ProducerTarget, 'publishEach' | 'close'>>;

/** Where a relay publishes: one stream, or a super stream routed by each row's key. */
export type RelayDestinationName = { readonly stream: string } | { readonly superStream: string };

/** One partition of a relay's super stream, as the broker answers now. */
export interface RelayPartition {
  /** The partition's stream. */
  readonly stream: string;
  /** The relay's last publishing id on it (0: it holds none of its rows). */
  readonly lastPublishingId: bigint;
  /**
   * The `sw-relay-through` of its last message: every row up to this publishing id was on its
   * partition when that message was sent (0: none); undefined when the message is not on the
   * partition any more (retention removed it).
   */
  readonly through: bigint | undefined;
}

/** What the destination holds of the relay's rows, read from the broker. */
export interface RelayStanding {
  /**
   * The destination holds every row up to this publishing id (0: none known): a stream's last
   * publishing id; on a super stream, the highest `through` of the partitions' last messages.
   */
  readonly resumeId: bigint;
  /** Each partition's standing, in the super stream's order (a stream's: the stream itself). */
  readonly partitions: readonly RelayPartition[];
}

/**
 * The stream or super stream a relay publishes to, under the relay's name as the producer of
 * every partition. A stream is the one-partition case whose order is the relay's, so its last
 * publishing id says it holds every row up to it. Rows to a super stream are routed by key as
 * the RabbitMQ clients route (`partitionIndexFor`), and frames to several partitions are in
 * flight at once: one partition may hold a later row than another lost. So each message there
 * records the publishing id up to which every row was confirmed when it was sent, and the
 * highest such record among the partitions' last messages is where the super stream is known
 * whole. A partition that gets no row holds nothing back: another's record passes it.
 */
export class RelayDestination {
  /** The stream's or the super stream's name. */
  readonly name: string;
  readonly superStream: boolean;
  private targets: Promise<readonly RelayTarget[]> | undefined;
  private made: readonly RelayTarget[] = [];

  constructor(
    private readonly broker: RelayBroker,
    /** The relay's name: its producer's on every partition. */
    readonly relay: string,
    to: RelayDestinationName,
  ) {
    if ('superStream' in to) {
      this.name = to.superStream;
      this.superStream = true;
      if (typeof broker.partitions !== 'function') {
        throw new ConfigError(
          'broker',
          'must answer partitions(superStream) to publish to a super stream',
          to.superStream,
        );
      }
    } else {
      this.name = to.stream;
      this.superStream = false;
      // Checks the stream's and the producer's names as the broker does, before anything is sent.
      this.made = [broker.target(to.stream, { producer: relay })];
      this.targets = Promise.resolve(this.made);
    }
  }

  /** The partitions' targets in the super stream's order (a stream's one), asked of the broker once. */
  partitionTargets(): Promise<readonly RelayTarget[]> {
    this.targets ??= this.makeTargets().catch((error: unknown) => {
      this.targets = undefined;
      throw error;
    });
    return this.targets;
  }

  /**
   * What the destination holds now. `rearm`: a start's question, which re-arms every target a
   * failed publish fenced (every publish before it has settled); without it, asked beside a
   * run (`backlog`, `prune`) without touching its targets.
   */
  async standing(rearm: boolean): Promise<RelayStanding> {
    const targets = await this.partitionTargets();
    const partitions = await Promise.all(
      targets.map(async (target): Promise<RelayPartition> => {
        const lastPublishingId = await (rearm ? target.lastPublishingId() : this.lastOf(target));
        const through = this.superStream ? await throughOf(target, lastPublishingId) : 0n;
        return { stream: target.stream, lastPublishingId, through };
      }),
    );
    const resumeId = this.superStream
      ? partitions.reduce(
          (highest, { through = 0n }) => (through > highest ? through : highest),
          0n,
        )
      : (partitions[0]?.lastPublishingId ?? 0n);
    return { resumeId, partitions };
  }

  /** The destination's name, the highest last publishing id of `standing`, and on a super stream each partition. */
  described(standing: RelayStanding): {
    readonly stream: string;
    readonly lastPublishingId: bigint;
    readonly partitions?: readonly RelayPartition[];
  } {
    const lastPublishingId = standing.partitions.reduce(
      (highest, partition) =>
        partition.lastPublishingId > highest ? partition.lastPublishingId : highest,
      0n,
    );
    return {
      stream: this.name,
      lastPublishingId,
      ...(this.superStream ? { partitions: standing.partitions } : {}),
    };
  }

  /** The index of the partition `key`'s rows go to, among `count`. */
  route(key: string, count: number): number {
    return this.superStream ? partitionIndexFor(key, count) : 0;
  }

  /**
   * Whether the row of `key` under `publishingId`, after the resume point, is on its partition
   * already: a partition's ids rise in the relay's order, and a row is sent to it only once
   * every row before it to the same partition was sent there, so one not above the partition's
   * last id is on it.
   */
  holds(standing: RelayStanding, key: string, publishingId: bigint): boolean {
    const { partitions } = standing;
    const partition = partitions[this.route(key, partitions.length)];
    return partition !== undefined && publishingId <= partition.lastPublishingId;
  }

  /** The message of `row` under `publishingId`, sent once every row up to `through` was confirmed. */
  message(row: OutboxRecord, publishingId: bigint, through: bigint): Uint8Array {
    return this.superStream
      ? outboxMessage(row, { producer: this.relay, publishingId, through })
      : outboxMessage(row);
  }

  /** Releases every partition's producer (see the `Target` port). */
  async release(): Promise<void> {
    await Promise.all(this.made.map((target) => target.release?.() ?? Promise.resolve()));
  }

  /**
   * Closes every target made, for good (a target without `close`: released): a connection
   * serves a bounded number of them, and a long-lived one outlives the relay.
   */
  async close(): Promise<void> {
    await Promise.all(
      this.made.map((target) => target.close?.() ?? target.release?.() ?? Promise.resolve()),
    );
  }

  private async makeTargets(): Promise<readonly RelayTarget[]> {
    // The constructor checked that a super stream's broker answers it.
    const partitions = await (this.broker.partitions?.(this.name) ?? []);
    if (partitions.length === 0) {
      throw new Error(`super stream '${this.name}' has no partitions`);
    }
    this.made = partitions.map((stream) => this.broker.target(stream, { producer: this.relay }));
    return this.made;
  }

  /** The relay's last publishing id on `target`, asked without re-arming it (a run may be under way). */
  private lastOf(target: RelayTarget): Promise<bigint> {
    const ask = target.lastPublishingIdOf?.bind(target);
    if (ask === undefined) {
      throw new ConfigError(
        'broker',
        'must make targets that answer lastPublishingIdOf',
        this.relay,
      );
    }
    return ask(this.relay);
  }
}

const DECIMAL = /^(0|[1-9][0-9]*)$/;

/**
 * The `sw-relay-through` of the message under `last` on `target` (found as a job's last result
 * is, see `RelayMark`): 0 when there is none; undefined when the message is not there. A
 * record that is not a publishing id below the message's own is refused: it cannot be one the
 * relay wrote, and trusting it could skip rows.
 */
async function throughOf(target: RelayTarget, last: bigint): Promise<bigint | undefined> {
  if (last === 0n) return 0n;
  const message = await target.readResult(last);
  if (message === undefined) return undefined;
  const through = decodeApplicationProperties(message)?.[OutboxProperty.THROUGH];
  if (through === undefined) return 0n;
  if (typeof through !== 'string' || !DECIMAL.test(through) || BigInt(through) >= last) {
    throw new Error(
      `the last message on partition '${target.stream}' (publishing id ${last}) has ` +
        `${OutboxProperty.THROUGH} ${JSON.stringify(through)}, not a publishing id below its own`,
    );
  }
  return BigInt(through);
}
