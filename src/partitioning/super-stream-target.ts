import { ConfigError, PublishError } from '../common/errors.js';
import { partitionIndexFor } from '../common/partition-routing.js';
import type { ResultWhere, Target } from '../ports/ports.js';

/** The options of `superStreamTarget`: the super stream's name and how a routing key picks a partition. */
export interface SuperStreamTargetOptions {
  /** The super stream's name (what logs and events call the target). */
  readonly superStream: string;
  /**
   * The partition a routing key goes to, as an index into the partition targets. Default:
   * the Java and JS clients' hash routing (MurmurHash3 x86_32, seed 104729, over the UTF-8
   * key, modulo the partition count), so a key lands where those clients would put it.
   */
  readonly partitionOf?: (routingKey: string, partitions: number) => number;
}

/**
 * A job's target over a super stream: each step's ONE write goes to ONE partition, picked by
 * the step's routing key (the job's `route` option), under the same producer name on every
 * partition. The seed's two rules make that effectively-once across partitions:
 *
 * - At most one result is unconfirmed across the whole super stream (the job's `maxInFlight`
 *   is 1, and this target refuses a second publish while one is under way). With two in
 *   flight to different partitions, a later publishing id could be stored while an earlier
 *   one to another partition is lost, and the resume point below would skip the lost one.
 * - The resume point is the HIGHEST last publishing id across the partitions: every lower
 *   result was confirmed before it was published.
 *
 * A partition holds a gapped run of publishing ids; a result published again after a crash
 * goes to the same partition (routing is a function of the step) and is discarded there.
 */
export class SuperStreamTarget implements Target {
  readonly stream: string;
  readonly producer: string;
  readonly maxWriteBytes: number;
  private publishing = false;
  /**
   * Each partition's last publishing id as last asked: where `readResult` looks first. Never
   * wrong for that, only incomplete: an id stays on the partition it was stored on.
   */
  private lastIds: readonly bigint[] | undefined;

  constructor(
    /** One target per partition, in the super stream's order, all under one producer name. */
    readonly partitions: readonly Target[],
    private readonly options: SuperStreamTargetOptions,
  ) {
    // A JavaScript caller may pass anything; checked as unknown, as Array.isArray would narrow
    // a readonly array to any[] for what follows.
    const given: unknown = partitions;
    if (!Array.isArray(given) || partitions.length === 0) {
      throw new ConfigError('partitions', 'must be a non-empty array of targets', partitions);
    }
    const producers = new Set(partitions.map((partition) => partition.producer));
    if (producers.size !== 1) {
      // The resume point is one producer's highest id; other names would resume apart.
      throw new ConfigError('partitions', 'must share one producer name', [...producers]);
    }
    const streams = new Set(partitions.map((partition) => partition.stream));
    if (streams.size !== partitions.length) {
      throw new ConfigError('partitions', 'must be distinct streams', [...streams]);
    }
    if (options.partitionOf !== undefined && typeof options.partitionOf !== 'function') {
      throw new ConfigError('partitionOf', 'must be a function', options.partitionOf);
    }
    this.stream = options.superStream;
    this.producer = partitions[0]?.producer ?? '';
    this.maxWriteBytes = Math.min(...partitions.map((partition) => partition.maxWriteBytes));
  }

  /** The highest last publishing id across the partitions (asking each re-arms its fence). */
  async lastPublishingId(): Promise<bigint> {
    const ids = await Promise.all(this.partitions.map((partition) => partition.lastPublishingId()));
    this.lastIds = ids;
    return ids.reduce((highest, id) => (id > highest ? id : highest), 0n);
  }

  /** Another name's highest last publishing id across the partitions that can tell it. */
  async lastPublishingIdOf(producer: string): Promise<bigint> {
    const ids = await Promise.all(
      this.partitions.map(
        (partition) => partition.lastPublishingIdOf?.(producer) ?? Promise.resolve(0n),
      ),
    );
    return ids.reduce((highest, id) => (id > highest ? id : highest), 0n);
  }

  async hasPublished(): Promise<boolean> {
    const answers = await Promise.all(this.partitions.map((partition) => partition.hasPublished()));
    return answers.includes(true);
  }

  /**
   * The result under `publishingId`, from the partition it went to: one whose last
   * publishing id, as `lastPublishingId()` last answered, is `publishingId` is asked first
   * (the runner asks for the resume point, the highest partition's last, so that one partition
   * is searched), then every other in partition order, the first answer winning (a
   * partition holds none of another's ids), each told `where`. Costs: each partition asked,
   * its own `readResult`'s.
   */
  async readResult(publishingId: bigint, where?: ResultWhere): Promise<Uint8Array | undefined> {
    const holds = (index: number): boolean => this.lastIds?.[index] === publishingId;
    const order = this.partitions.map((_, index) => index);
    order.sort((a, b) => Number(holds(b)) - Number(holds(a)));
    for (const index of order) {
      const message = await this.partitions[index]?.readResult(publishingId, where);
      if (message !== undefined) return message;
    }
    return undefined;
  }

  async publish(
    publishingId: bigint,
    messages: readonly Uint8Array[],
    routingKey?: string,
  ): Promise<void> {
    if (routingKey === undefined) {
      throw new PublishError(
        this.stream,
        publishingId,
        false,
        'a super-stream target needs the job option route',
      );
    }
    if (this.publishing) {
      throw new PublishError(
        this.stream,
        publishingId,
        false,
        'a super-stream target takes one unconfirmed result at a time (maxInFlight 1)',
      );
    }
    const partition = this.partitions[this.partitionIndex(publishingId, routingKey)];
    this.publishing = true;
    try {
      await partition?.publish(publishingId, messages);
    } finally {
      this.publishing = false;
    }
  }

  /** Releases every partition's producer (see the `Target` port). */
  async release(): Promise<void> {
    await Promise.all(
      this.partitions.map((partition) => partition.release?.() ?? Promise.resolve()),
    );
  }

  private partitionIndex(publishingId: bigint, routingKey: string): number {
    const count = this.partitions.length;
    const { partitionOf = partitionIndexFor } = this.options;
    const index = partitionOf(routingKey, count);
    if (!Number.isSafeInteger(index) || index < 0 || index >= count) {
      throw new PublishError(
        this.stream,
        publishingId,
        false,
        `partitionOf('${routingKey}') must be an index below ${count}, returned ${String(index)}`,
      );
    }
    return index;
  }
}

/** A target over a super stream's partition targets (in partition order); see `SuperStreamTarget`. */
export function superStreamTarget(
  partitions: readonly Target[],
  options: SuperStreamTargetOptions,
): SuperStreamTarget {
  return new SuperStreamTarget(partitions, options);
}
