import { PublishError, describe, refusedUntilResumed } from '../common/errors.js';
import type { ResultWhere, Target } from '../ports/ports.js';
import { findResultIn } from '../result-format/stored-result.js';
import { messageAt } from '../ports/chunk-message.js';
import {
  PRECONDITION_FAILED,
  STREAM_DOES_NOT_EXIST,
  STREAM_NOT_AVAILABLE,
} from '../common/stream-protocol.js';
import { SimulatedCrash, type FaultPoint } from './errors.js';
import type { ConfirmHolds } from './confirm-holds.js';
import type { DeclaredProducers, ProducerDeclaration } from './declared-producers.js';
import type { FaultPlan } from './faults.js';
import type { StreamLog } from './stream-log.js';
import type { LogChunk } from './stored-chunk.js';
import { PendingChunk } from './pending-chunk.js';
import type { ProducerEntry } from '../producer/stream-producer.js';
import { firstChunkAtTime } from './offset-spec.js';
import { writeRefusal } from '../ports/write-size.js';
import { asPromise } from '../common/as-promise.js';

/**
 * A named producer on an embedded stream. Deduplicates like osiris_writer: a publishing id not
 * greater than the highest one stored for the name is confirmed and discarded; an unknown
 * name stores anything, id 0 included; the empty name (an unnamed producer's, see
 * `broker.producer`) never deduplicates. The write is stored synchronously when `publish` is
 * called, so pipelined publishes land in call order.
 *
 * Like the RabbitMQ target, it keeps the `Target` contract's fence: after a failed publish,
 * every publish is refused (nothing stored) until `lastPublishingId()` has answered again.
 * A job's target declares its producer on its simulated connection at its first publish, and
 * is refused there as RabbitMQ refuses a name another producer holds on that connection
 * (./declared-producers.ts), until that one is released or crashes.
 */
export class MemoryTarget implements Target {
  readonly stream: string;
  /** Set by a crash fault: this "process" is gone and does nothing more. */
  private crashedAt: FaultPoint | undefined;
  /** Why publishing is refused until `lastPublishingId()` answers; undefined: not fenced. */
  private fenced: string | undefined;
  /** Whether its producer is declared on its connection (a job's target only). */
  private declared = false;

  constructor(
    private readonly log: StreamLog,
    readonly producer: string,
    readonly maxWriteBytes: number,
    private readonly faults: FaultPlan,
    private readonly holds: ConfirmHolds,
    private readonly now: () => number,
    /** Where a job's target declares its producer; undefined for a feeding producer's. */
    private readonly declarations?: {
      readonly producers: DeclaredProducers;
      readonly connection: string;
    },
  ) {
    this.stream = log.name;
  }

  lastPublishingId(): Promise<bigint> {
    return asPromise(() => {
      this.assertAlive();
      this.log.assertExists();
      this.fenced = undefined;
      return this.log.sequence(this.producer) ?? 0n;
    });
  }

  lastPublishingIdOf(producer: string): Promise<bigint> {
    return asPromise(() => {
      this.assertAlive();
      this.log.assertExists();
      return this.log.sequence(producer) ?? 0n;
    });
  }

  /** From the producer table, which retention leaves in place. */
  hasPublished(): Promise<boolean> {
    return asPromise(() => {
      this.assertAlive();
      this.log.assertExists();
      return this.log.sequence(this.producer) !== undefined;
    });
  }

  /**
   * Looks at the producer's latest write first (the log's hint: a restart asks for the result
   * under the last publishing id, which is that write). Then, as the RabbitMQ target does,
   * asks `where.writtenAfterMs` and reads on from the first chunk stamped at or after it to the wanted
   * result, a later result of this producer or the end; and searches the chunks before it
   * (all of them without the bound) backward: it stops at the wanted result or at the first
   * chunk holding an earlier result of this producer (see the Target port).
   */
  async readResult(publishingId: bigint, where?: ResultWhere): Promise<Uint8Array | undefined> {
    const hinted = await asPromise(() => {
      this.assertAlive();
      this.log.assertExists();
      const latest = this.log.lastWrite(this.producer);
      if (latest === undefined) return undefined;
      const finding = findResultIn(latest, latest.count, this.producer, publishingId);
      return 'index' in finding ? messageAt(latest, finding.index) : undefined;
    });
    if (hinted !== undefined) return hinted;
    // Asked only now, as the RabbitMQ target does: it costs the caller a read of its source.
    const bound = await where?.writtenAfterMs?.();
    return asPromise(() => {
      this.assertAlive();
      this.log.assertExists();
      const { chunks } = this.log;
      const from = bound === undefined ? chunks.length : firstChunkAtTime(this.log, bound);
      for (let at = from; at < chunks.length; at++) {
        const finding = this.find(at, publishingId);
        if ('index' in finding) return finding.message;
        if (finding.later) break;
      }
      for (let at = from - 1; at >= 0; at--) {
        const finding = this.find(at, publishingId);
        if ('index' in finding) return finding.message;
        if (finding.earlier) return undefined;
      }
      return undefined;
    });
  }

  /** What chunk `at` holds of the producer's result `publishingId`. */
  private find(
    at: number,
    publishingId: bigint,
  ):
    | { readonly index: number; readonly message: Uint8Array }
    | { earlier: boolean; later: boolean } {
    const chunk = this.log.chunks[at] as LogChunk;
    const finding = findResultIn(chunk, chunk.count, this.producer, publishingId);
    // A write is one chunk here, so the first match is a 'batch' result's first part.
    return 'index' in finding
      ? { index: finding.index, message: messageAt(chunk, finding.index) }
      : finding;
  }

  async publish(publishingId: bigint, messages: readonly Uint8Array[]): Promise<void> {
    const chunk = this.pendingChunk();
    try {
      this.write(publishingId, messages, chunk);
    } finally {
      chunk.flush();
    }
    await this.holds.released(this.stream);
  }

  /**
   * Publishes each message under its own publishing id in ONE write, as a producer's batch
   * goes to RabbitMQ in one Publish frame (see `StreamProducer`): the messages stored are ONE
   * chunk, as osiris stores a frame's, its writer the last id stored. Each message is otherwise
   * a publish of its own, in order: deduplicated on its id (against the ids before it too),
   * counted by the fault plan, refused after a failed one, and settled by its own promise (held
   * by `holdConfirms` as any publish). A fault that fires on a message first stores those
   * before it, so that the fault meets the log as it would a publish of its own.
   */
  publishEach(entries: readonly ProducerEntry[]): Promise<void>[] {
    const chunk = this.pendingChunk();
    const failures = entries.map(({ publishingId, message }) => {
      try {
        this.write(publishingId, [message], chunk);
        return undefined;
      } catch (error) {
        return { error };
      }
    });
    chunk.flush();
    return failures.map((failed) =>
      failed === undefined ? this.holds.released(this.stream) : Promise.reject(failed.error),
    );
  }

  /** One publish, stored into `chunk` (or discarded as a duplicate); throws when it fails. */
  private write(publishingId: bigint, messages: readonly Uint8Array[], chunk: PendingChunk): void {
    this.assertAlive();
    if (this.fenced !== undefined) {
      // Before the fault plan counts it: a refused publish is not an attempt.
      throw this.error(publishingId, true, refusedUntilResumed(this.fenced));
    }
    try {
      this.declare(publishingId);
      this.store(publishingId, messages, chunk);
    } catch (error) {
      this.fenced = `publish ${publishingId}: ${describe(error)}`;
      throw error;
    }
  }

  private pendingChunk(): PendingChunk {
    return new PendingChunk(this.log, this.producer, this.now);
  }

  /** Removes the producer from its connection; the next publish declares it again. */
  release(): Promise<void> {
    return asPromise(() => {
      this.undeclare();
      this.fenced ??= 'the producer was released';
    });
  }

  /** Before the fault plan counts the publish: a refused declaration sends nothing. */
  private declare(publishingId: bigint): void {
    const { declarations } = this;
    if (declarations === undefined || this.declared) return;
    if (!declarations.producers.declare(this.declaration(declarations.connection), this)) {
      const reason = 'declaring the producer failed: precondition failed';
      throw this.error(publishingId, false, reason, PRECONDITION_FAILED);
    }
    this.declared = true;
  }

  private undeclare(): void {
    const { declarations } = this;
    if (declarations === undefined) return;
    declarations.producers.release(this.declaration(declarations.connection), this);
    this.declared = false;
  }

  private declaration(connection: string): ProducerDeclaration {
    return { connection, stream: this.stream, producer: this.producer };
  }

  private store(publishingId: bigint, messages: readonly Uint8Array[], chunk: PendingChunk): void {
    // What was gathered before a fault fires is stored first, as its own publishes would be.
    const point = this.faults.onPublish(this.stream, this.producer, () => chunk.flush());
    if (point === 'before-publish') this.crash(point);
    if (point === 'refuse-publish') {
      const reason = 'stream not available';
      throw this.error(publishingId, true, reason, STREAM_NOT_AVAILABLE);
    }
    this.validate(publishingId, messages);
    if (!this.log.exists) {
      throw this.error(publishingId, false, 'stream does not exist', STREAM_DOES_NOT_EXIST);
    }
    const stored = chunk.sequence();
    // Unnamed, as an unnamed RabbitMQ publisher: no deduplication, no producer table entry.
    if (this.producer === '' || stored === undefined || publishingId > stored) {
      chunk.add(publishingId, messages);
    }
    if (point === 'after-publish') this.crash(point);
    if (point === 'lose-confirm') throw this.error(publishingId, true, 'confirm lost');
    // The confirm is delivered; the crash shows on the next call.
    if (point === 'after-confirm') {
      this.crashedAt = point;
      this.undeclare();
    }
  }

  private validate(publishingId: bigint, messages: readonly Uint8Array[]): void {
    const refusal = writeRefusal(publishingId, messages, this.maxWriteBytes);
    if (refusal !== undefined) {
      throw this.error(publishingId, false, refusal.reason, refusal.code);
    }
  }

  private assertAlive(): void {
    if (this.crashedAt !== undefined) {
      throw new SimulatedCrash(this.stream, this.producer, this.crashedAt);
    }
  }

  private crash(point: FaultPoint): never {
    this.crashedAt = point;
    this.undeclare(); // the process died, and its connection with it
    throw new SimulatedCrash(this.stream, this.producer, point);
  }

  private error(id: bigint, retriable: boolean, reason: string, code?: number): PublishError {
    return new PublishError(this.stream, id, retriable, reason, code);
  }
}
