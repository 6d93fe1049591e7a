import { randomUUID } from 'node:crypto';
import { Offset, type ClientParams } from 'rabbitmq-stream-js-client';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { CreditRequest } from 'rabbitmq-stream-js-client/dist/requests/credit_request.js';
import { ConsumerUpdateResponse } from 'rabbitmq-stream-js-client/dist/requests/consumer_update_response.js';
import { SubscribeRequest } from 'rabbitmq-stream-js-client/dist/requests/subscribe_request.js';
import type { ConsumerUpdateQuery } from 'rabbitmq-stream-js-client/dist/responses/consumer_update_query.js';
import type { SubscribeResponse } from 'rabbitmq-stream-js-client/dist/responses/subscribe_response.js';
import type { SourceChunk } from '../core/ports.js';
import { RetentionGapError, SourceError, describe } from '../common/errors.js';
import { parseDeliver } from './deliver-chunk.js';
import { OK, STREAM_NOT_AVAILABLE, codeName } from '../common/stream-protocol.js';
import { silentLogger } from './silent-logger.js';
import { queryStreamStats } from './stream-stats.js';
import { routeDeliverFrames } from './gaps/consume-raw-chunks.js';

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
   * first offset the stream still holds.
   */
  readonly from: bigint | 'first';
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
  constructor(stream: string, nextOffset: bigint, reason: string) {
    super(stream, true, `the subscription was lost: ${reason}`, nextOffset);
  }
}

/** The broker refused the subscription; `retriable` when it may accept it later. */
export class SubscribeError extends SourceError {
  override readonly name = 'SubscribeError';
  constructor(
    stream: string,
    offset: bigint,
    readonly code: number,
    retriable: boolean,
  ) {
    super(stream, retriable, `subscribing failed with code ${code} (${codeName(code)})`, offset);
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

  private constructor(
    private readonly connection: Connection,
    private readonly options: SubscriptionOptions,
  ) {
    this.from = options.from === 'first' ? 0n : options.from;
  }

  static async open(params: ClientParams, options: SubscriptionOptions): Promise<Subscription> {
    // The listeners exist before the subscription does: they reach it through `ref`.
    const ref: { subscription?: Subscription } = {};
    const connecting = Connection.connect(
      {
        ...params,
        connectionId: randomUUID(),
        listeners: {
          connection_closed: () => ref.subscription?.lose('connection closed'),
          metadata_update: (update) => {
            if (update.metadataInfo.stream === options.stream) {
              ref.subscription?.lose(`stream metadata changed (code ${update.metadataInfo.code})`);
            }
          },
          consumer_update_query: (query) => ref.subscription?.activate(query),
        },
      },
      silentLogger,
    );
    const connection = await withTimeout(connecting, options.connectTimeoutMs, options, 'connect');
    const subscription = new Subscription(connection, options);
    ref.subscription = subscription;
    routeDeliverFrames(
      connection,
      (frame) => subscription.deliver(frame),
      (error) => subscription.lose(`reading from the connection failed: ${describe(error)}`),
    );
    try {
      await withTimeout(subscription.subscribe(), options.connectTimeoutMs, options, 'subscribe');
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
    this.notify();
    try {
      // Closing the connection ends the subscription with it (and stops the client's
      // heartbeat timer, also after a loss); a dead peer must not hang us.
      await withTimeout(
        this.connection.close({ closingCode: 0, closingReason: '', manuallyClose: true }),
        this.options.connectTimeoutMs,
        this.options,
        'close',
      );
    } catch {
      // The connection is going away either way; nothing was lost.
    }
  }

  private async subscribe(): Promise<void> {
    const { stream, from, credit, singleActive } = this.options;
    if (from !== 'first') {
      // The broker attaches a reader below the first offset it still holds at that first
      // offset, silently: the gap is checked here, where it can still be named.
      const { firstChunkId } = await queryStreamStats(this.connection, stream);
      if (from < firstChunkId) throw new RetentionGapError(stream, from, firstChunkId);
    }
    const properties: Record<string, string> = {};
    if (singleActive !== undefined) {
      properties['single-active-consumer'] = 'true';
      properties['name'] = singleActive.name;
    }
    const response = await this.connection.sendAndWait<SubscribeResponse>(
      new SubscribeRequest({
        subscriptionId: SUBSCRIPTION_ID,
        stream,
        offset: from === 'first' ? Offset.first() : Offset.offset(from),
        credit,
        properties,
      }),
    );
    if (response.code !== OK) {
      throw new SubscribeError(
        stream,
        this.from,
        response.code, // may clear by itself (leader election)
        response.code === STREAM_NOT_AVAILABLE,
      );
    }
  }

  private deliver(frame: Buffer): void {
    if (this.closed || this.failure !== undefined) return;
    try {
      const { chunk, nextOffset } = parseDeliver(frame, this.options.stream, this.from);
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
}

function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  options: SubscriptionOptions,
  what: string,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new SubscriptionLostError(
            options.stream,
            options.from === 'first' ? 0n : options.from,
            `${what} timed out after ${ms} ms`,
          ),
        ),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
