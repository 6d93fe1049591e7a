import { Offset, type ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { CreditRequest } from 'rabbitmq-stream-js-client/dist/requests/credit_request.js';
import { ConsumerUpdateResponse } from 'rabbitmq-stream-js-client/dist/requests/consumer_update_response.js';
import { SubscribeRequest } from 'rabbitmq-stream-js-client/dist/requests/subscribe_request.js';
import type { ConsumerUpdateQuery } from 'rabbitmq-stream-js-client/dist/responses/consumer_update_query.js';
import type { SubscribeResponse } from 'rabbitmq-stream-js-client/dist/responses/subscribe_response.js';
import type { SourceChunk } from '../core/ports.js';
import { RetentionGapError, SourceError, describe } from '../common/errors.js';
import { parseDeliver } from './deliver-chunk.js';
import { OK, codeName, isRetriableCode } from '../common/stream-protocol.js';
import { queryStreamStats } from './stream-stats.js';
import { abandon, socketOf } from './gaps/client-socket.js';
import { routeDeliverFrames } from './gaps/consume-raw-chunks.js';
import { openConnection } from './gaps/handshake.js';

/** Single active consumer: one reader per `name` on the stream reads; the others wait. */
export interface SingleActiveOptions {
  /** Consumer group name (the broker's "consumer reference"); same on every instance. */
  readonly name: string;
  /**
   * Where to start when this instance becomes the active one: the broker asks at that
   * moment, so the answer can reflect what the previous active instance already did (for
   * the engine: the target's last publishing id + 1). Default: where `read` was asked to
   * start, or after the last chunk this reader delivered.
   */
  readonly resumeFrom?: () => Promise<bigint>;
}

export interface SubscriptionOptions {
  readonly stream: string;
  /**
   * First offset to deliver; earlier messages of the first chunk are cut off. 'first': the
   * first offset the stream still holds. 'last': the stream's last chunk of messages
   * (osiris skips tracking chunks for it; with none, it waits for the next one).
   */
  readonly from: bigint | 'first' | 'last';
  /** Chunks the broker may send ahead of the reader: the bound on buffered chunks. */
  readonly credit: number;
  readonly singleActive?: SingleActiveOptions;
  /** Gives up connecting (and subscribing) after this long. */
  readonly connectTimeoutMs: number;
}

/**
 * The connection was lost or the broker ended the subscription (stream leader moved,
 * stream unavailable): reading again from the next undelivered offset may succeed.
 */
export class SubscriptionLostError extends SourceError {
  override readonly name = 'SubscriptionLostError';
  override readonly code = 'SUBSCRIPTION_LOST';
  constructor(stream: string, nextOffset: bigint, reason: string) {
    super(stream, true, `the subscription was lost: ${reason}`, nextOffset);
  }
}

/** The broker refused the subscription; `retriable` when it may accept it later. */
export class SubscribeError extends SourceError {
  override readonly name = 'SubscribeError';
  override readonly code = 'SUBSCRIBE_REFUSED';
  constructor(
    stream: string,
    offset: bigint,
    readonly responseCode: number,
    retriable: boolean,
  ) {
    super(
      stream,
      retriable,
      `subscribing failed with code ${responseCode} (${codeName(responseCode)})`,
      offset,
    );
  }
}

const SUBSCRIPTION_ID = 0;

/**
 * One subscription on its own connection: the raw Deliver frames become `SourceChunk`s in
 * a queue the reader drains with `take()`. Credit is granted one chunk at a time as the
 * reader takes chunks, so at most `credit` chunks are ever buffered.
 */
export class Subscription {
  private readonly queue: SourceChunk[] = [];
  private failure: Error | undefined;
  private closed = false;
  private wake: (() => void) | undefined;
  /** Messages before this offset are dropped; moves forward with every delivery. */
  private from: bigint;
  /**
   * The offset the broker was last asked to start at, until its first delivery is checked:
   * the broker attaches a reader below the first offset it still holds at that first offset,
   * silently, so a first chunk beyond it may mean a retention gap (see `checkRetention`).
   */
  private requested: bigint | undefined;
  /** A retention check in progress; chunks wait for it. */
  private checking: Promise<void> | undefined;
  /** Ends waits that must not outlive the subscription. */
  private readonly closing = new AbortController();

  private constructor(
    private readonly connection: Connection,
    private readonly options: SubscriptionOptions,
  ) {
    this.from = typeof options.from === 'bigint' ? options.from : 0n;
  }

  static async open(params: ClientParams, options: SubscriptionOptions): Promise<Subscription> {
    // The listeners exist before the subscription does: they reach it through `ref`.
    const ref: { subscription?: Subscription } = {};
    const connection = await openConnection(params, options.connectTimeoutMs, {
      connection_closed: () => ref.subscription?.lose('connection closed'),
      metadata_update: (update) => {
        if (update.metadataInfo.stream === options.stream) {
          ref.subscription?.lose(`stream metadata changed (code ${update.metadataInfo.code})`);
        }
      },
      consumer_update_query: (query) => ref.subscription?.activate(query),
    });
    const subscription = new Subscription(connection, options);
    ref.subscription = subscription;
    routeDeliverFrames(
      connection,
      (frame) => subscription.deliver(frame),
      (error) => subscription.lose(`reading from the connection failed: ${describe(error)}`),
    );
    try {
      await subscription.withTimeout(subscription.subscribe(), 'subscribe');
    } catch (error) {
      await subscription.close();
      throw error;
    }
    return subscription;
  }

  /**
   * The next chunk; undefined once `close()` was called. Throws `SubscriptionLostError`,
   * `SubscribeError` or `MalformedChunkError` (from ./deliver-chunk.ts).
   */
  async take(): Promise<SourceChunk | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      if (this.checking !== undefined) {
        await this.checking;
        continue;
      }
      const chunk = this.queue.shift();
      if (chunk !== undefined) {
        this.grant(1);
        return chunk;
      }
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    this.notify();
    if (this.failure !== undefined) {
      // Lost or unusable: it would never answer Close.
      abandon(this.connection);
      return;
    }
    try {
      // Closing the connection ends the subscription with it (and stops the client's
      // heartbeat timer); a dead peer must not hang us.
      await this.withTimeout(
        this.connection.close({ closingCode: 0, closingReason: '', manuallyClose: true }),
        'close',
      );
    } catch {
      socketOf(this.connection).destroy(); // the heartbeat was stopped by close() already
    }
  }

  private async subscribe(): Promise<void> {
    const { stream, from, credit, singleActive } = this.options;
    const properties: Record<string, string> = {};
    if (singleActive !== undefined) {
      properties['single-active-consumer'] = 'true';
      properties['name'] = singleActive.name;
    }
    if (typeof from === 'bigint') this.requested = from;
    const response = await this.connection.sendAndWait<SubscribeResponse>(
      new SubscribeRequest({
        subscriptionId: SUBSCRIPTION_ID,
        stream,
        offset:
          from === 'first' ? Offset.first() : from === 'last' ? Offset.last() : Offset.offset(from),
        credit,
        properties,
      }),
    );
    if (response.code !== OK) {
      throw new SubscribeError(
        stream,
        this.from,
        response.code,
        isRetriableCode(response.code), // e.g. a leader election passes by itself
      );
    }
  }

  private deliver(frame: Buffer): void {
    if (this.closed || this.failure !== undefined) return;
    try {
      const { chunk, chunkId, nextOffset } = parseDeliver(frame, this.options.stream, this.from);
      if (this.requested !== undefined) {
        const requested = this.requested;
        this.requested = undefined;
        if (chunkId > requested) this.checkRetention(requested);
      }
      if (nextOffset > this.from) this.from = nextOffset;
      if (chunk === undefined) {
        this.grant(1);
        return;
      }
      this.queue.push(chunk);
    } catch (error) {
      this.failure = error instanceof Error ? error : new Error(describe(error));
    }
    this.notify();
  }

  /**
   * The first chunk delivered starts beyond `requested`. Tracking chunks (a consumer's
   * `store_offset`) take offsets but are never delivered, so that alone proves nothing; the
   * stream's first offset, asked AFTER the delivery, does: when it is still at or below
   * `requested`, the offsets in between are stored and were skipped as tracking chunks;
   * when it is beyond, retention removed `requested` before the reader got there. Chunks
   * wait in the queue until this is known.
   */
  private checkRetention(requested: bigint): void {
    const { stream } = this.options;
    const check = async (): Promise<void> => {
      try {
        const { firstChunkId } = await this.withTimeout(
          queryStreamStats(this.connection, stream),
          'checking the first offset',
        );
        if (firstChunkId > requested && this.failure === undefined) {
          this.queue.length = 0; // nothing after a gap may be delivered
          this.failure = new RetentionGapError(stream, requested, firstChunkId);
        }
      } catch (error) {
        this.lose(`checking for a retention gap failed: ${describe(error)}`);
      } finally {
        this.checking = undefined;
        this.notify();
      }
    };
    this.checking = check();
  }

  private lose(reason: string): void {
    if (this.closed || this.failure !== undefined) return;
    this.failure = new SubscriptionLostError(this.options.stream, this.from, reason);
    this.notify();
  }

  /** The broker made this reader the active one (or passive again) of its group. */
  private activate(query: ConsumerUpdateQuery): void {
    const resumeFrom = this.options.singleActive?.resumeFrom;
    const answer = async (): Promise<void> => {
      if (query.active !== 0 && resumeFrom !== undefined) this.from = await resumeFrom();
      // The offset answered is where the broker starts: checked like a subscribe's.
      this.requested = query.active !== 0 ? this.from : undefined;
      await this.connection.send(
        new ConsumerUpdateResponse({
          correlationId: query.correlationId,
          responseCode: OK,
          offset: Offset.offset(this.from),
        }),
      );
    };
    answer().catch((error: unknown) =>
      this.lose(`answering the single-active-consumer update failed: ${describe(error)}`),
    );
  }

  private grant(chunks: number): void {
    if (this.closed || this.failure !== undefined) return;
    // Fire and forget: the client's send() never settles once the socket is closed, and a
    // lost connection is reported by the close listener anyway.
    void this.connection
      .send(new CreditRequest({ subscriptionId: SUBSCRIPTION_ID, credit: chunks }))
      .catch(() => undefined);
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /**
   * `promise`, or a SubscriptionLostError after `connectTimeoutMs` or once the subscription
   * is closed: the client leaves requests on a lost connection pending forever, and no timer
   * may outlive the subscription.
   */
  private withTimeout<T>(promise: Promise<T>, what: string): Promise<T> {
    const { stream, connectTimeoutMs } = this.options;
    const lost = (reason: string): SubscriptionLostError =>
      new SubscriptionLostError(stream, this.from, `${what} ${reason}`);
    let timer: NodeJS.Timeout | undefined;
    let onClose = (): void => undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(lost(`timed out after ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
      onClose = () => reject(lost('was cut short by close()'));
      this.closing.signal.addEventListener('abort', onClose, { once: true });
    });
    return Promise.race([promise, timeout]).finally(() => {
      clearTimeout(timer);
      this.closing.signal.removeEventListener('abort', onClose);
    });
  }
}
