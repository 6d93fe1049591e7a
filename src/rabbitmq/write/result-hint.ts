import { QueryOffsetRequest } from 'rabbitmq-stream-js-client/dist/requests/query_offset_request.js';
import { StoreOffsetRequest } from 'rabbitmq-stream-js-client/dist/requests/store_offset_request.js';
import { StreamStatsRequest } from 'rabbitmq-stream-js-client/dist/requests/stream_stats_request.js';
import type { QueryOffsetResponse } from 'rabbitmq-stream-js-client/dist/responses/query_offset_response.js';
import type { StreamStatsResponse } from 'rabbitmq-stream-js-client/dist/responses/stream_stats_response.js';
import { OK } from '../../common/stream-protocol.js';
import { trackingReference } from '../../common/tracking-reference.js';
import type { ReconnectingConnection } from '../gaps/reconnect.js';

/*
 * A result hint: where on its target stream a producer's latest confirmed result lies, kept by
 * the broker with server-side offset tracking so that a restart (`readResult`, see
 * ./result-lookup.ts) starts its search there instead of at the stream's end. A hint is never
 * trusted, only checked: the search verifies what it reads by the result's own properties, and
 * a hint that is missing, stale, wrong or past the stream's end costs time, never an answer.
 *
 * The value is the stream's committed chunk id (StreamStats) asked just after a confirm: the
 * first offset of a chunk at or after the chunk that holds that result, since a confirm comes
 * once its chunk is committed. A publish confirm carries no offset, and this is the one
 * question that answers near it without reading the stream. Usually the producer's result is
 * in that very chunk; others' writes committed between the confirm and the question put it a
 * few chunks before.
 */

/** The tracking reference of `producer`'s result hint on its target `stream`. */
export function hintReference(stream: string, producer: string): string {
  return trackingReference('hint', stream, producer);
}

/** What the hint keeper asks of the broker: where the stream's committed end is, and a store. */
export interface HintStore {
  /** The committed chunk id of the stream (-1 while it is empty). */
  committedChunkId(): Promise<bigint>;
  /** Stores `offset` as the hint (StoreOffset has no answer: sent, not confirmed). */
  save(offset: bigint): Promise<void>;
}

/**
 * When the keeper stores: at most once per `everyMs`, after `quietMs` without a confirm, or
 * `4 * quietMs` late for a producer that never pauses that long.
 */
export interface HintPace {
  readonly everyMs: number;
  readonly quietMs: number;
}

/**
 * Keeps a producer's result hint, off the publish path: a confirm only notes the time. A store
 * (one StreamStats round trip, then one StoreOffset frame, which writes a tracking chunk that
 * takes an offset of the stream and is never delivered) is made at most once per `everyMs`,
 * and never within `everyMs` of the first confirm after `enable()`: a target that publishes
 * for a shorter time stores none. It waits for `quietMs` without a confirm, so that the hint
 * is taken just after the producer's latest result, but not more than `4 * quietMs` past the
 * time a store was due: a producer that never pauses is hinted about once per `everyMs` anyway.
 * A failed store is let go: the hint before it stays, and the next confirm tries again.
 */
export class ResultHintKeeper {
  private enabled = false;
  private lastConfirmAt = 0;
  /** When the next store may be made; undefined until the first confirm. */
  private nextAt: number | undefined;
  /** A confirm came after the last store was asked for. */
  private pending = false;
  private storing = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly store: HintStore,
    private readonly pace: HintPace,
    private readonly now: () => number = Date.now,
  ) {}

  /** From now on confirms are hinted (the target's resume point was read: a job runs it). */
  enable(): void {
    this.enabled = true;
  }

  /** A result of the producer was confirmed. */
  confirmed(): void {
    if (!this.enabled) return;
    const now = this.now();
    this.lastConfirmAt = now;
    this.pending = true;
    this.nextAt ??= now + this.pace.everyMs;
    this.arm();
  }

  /** Stops storing; a store under way finishes. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(): void {
    if (this.closed || this.storing || this.timer !== undefined || !this.pending) return;
    const now = this.now();
    const quietAt = this.lastConfirmAt + this.pace.quietMs;
    const at = Math.max(this.nextAt ?? now, Math.min(quietAt, this.overdueAt()));
    this.timer = setTimeout(
      () => {
        this.fire();
      },
      Math.max(at - now, 0),
    );
    this.timer.unref();
  }

  /** Past this, a due store waits no longer for the producer to pause. */
  private overdueAt(): number {
    return (this.nextAt ?? this.now()) + 4 * this.pace.quietMs;
  }

  private fire(): void {
    this.timer = undefined;
    const now = this.now();
    const quiet = now - this.lastConfirmAt >= this.pace.quietMs;
    if (!quiet && now < this.overdueAt()) {
      this.arm();
      return;
    }
    void this.storeNow(now);
  }

  private async storeNow(now: number): Promise<void> {
    this.pending = false;
    this.storing = true;
    this.nextAt = now + this.pace.everyMs;
    try {
      const chunkId = await this.store.committedChunkId();
      if (chunkId >= 0n && !this.closed) await this.store.save(chunkId);
    } catch {
      // A hint is an optimisation: without this one, the previous stays and is checked as any.
    } finally {
      this.storing = false;
      this.arm();
    }
  }
}

/** What the hint's requests use of the target's connection. */
export type HintLink = Pick<ReconnectingConnection, 'ready' | 'request'>;

/**
 * The hint store of `producer` on `stream`, over the target's own connection to the stream's
 * leader (no connection of its own): StreamStats, StoreOffset and QueryOffset are stream
 * commands any connection may send.
 */
export class LinkHintStore implements HintStore {
  readonly reference: string;

  constructor(
    private readonly link: HintLink,
    private readonly stream: string,
    producer: string,
    private readonly timeoutMs: number,
  ) {
    this.reference = hintReference(stream, producer);
  }

  async committedChunkId(): Promise<bigint> {
    const response = await this.link.request<StreamStatsResponse>(
      new StreamStatsRequest(this.stream),
      this.timeoutMs,
    );
    return response.code === OK ? response.statistics.committedChunkId : -1n;
  }

  async save(offset: bigint): Promise<void> {
    const { connection } = await this.link.ready(this.timeoutMs);
    await connection.send(
      new StoreOffsetRequest({
        reference: this.reference,
        stream: this.stream,
        offsetValue: offset,
      }),
    );
  }

  /** The hint stored, undefined when there is none or it cannot be read (a hint is optional). */
  async read(): Promise<bigint | undefined> {
    try {
      const response = await this.link.request<QueryOffsetResponse>(
        new QueryOffsetRequest({ reference: this.reference, stream: this.stream }),
        this.timeoutMs,
      );
      return response.code === OK ? response.offsetValue : undefined;
    } catch {
      return undefined;
    }
  }
}
