import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import { DeletePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_publisher_request.js';
import { MetadataRequest } from 'rabbitmq-stream-js-client/dist/requests/metadata_request.js';
import { QueryPublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/query_publisher_request.js';
import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import type { QueryPublisherResponse } from 'rabbitmq-stream-js-client/dist/responses/query_publisher_response.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import type { SubEntryCompression } from '../codecs/sub-entry.js';
import type { Target } from '../core/ports.js';
import { maxWriteBytes } from '../core/write-size.js';
import { ConfigError, PublishError, StreamWindowsError, describe } from '../common/errors.js';
import type { Live, ReconnectingConnection } from './gaps/reconnect.js';
import { publishFrame, sendFrame } from './gaps/raw-publish.js';
import {
  PUBLISHER_DOES_NOT_EXIST,
  STREAM_DOES_NOT_EXIST,
  codeName,
  isRetriablePublishCode,
  MAX_PUBLISHING_ID,
} from '../common/stream-protocol.js';
import { InFlight } from './publish-in-flight.js';
import { producerHasPublished } from './target-history.js';

export interface TargetOptions {
  /** Producer name: the broker deduplicates on it. Stable across restarts, unique per target. */
  readonly producer: string;
  /** Publishes awaiting their confirm at once; `publish` waits for a slot beyond. Default 64. */
  readonly maxInFlight?: number;
  /**
   * A publish not confirmed within this long rejects with a retriable `PublishError` (the
   * engine then resumes from the broker's last publishing id). Default 30 s.
   */
  readonly confirmTimeoutMs?: number;
  /** Compression of sub-entry batches (several messages under one id). Default 'none'. */
  readonly compression?: SubEntryCompression;
}

/**
 * The `Target` port over a RabbitMQ stream: one named producer (deduplicating publisher) on
 * a connection that may be shared with other targets and that reconnects by itself.
 *
 * Each publish is one Publish frame with one entry under the caller's publishing id (see
 * ./gaps/raw-publish.ts) and settles with that id's confirm or error, routed to this
 * publisher alone (./gaps/publish-confirms.ts). When the connection is lost, everything in
 * flight rejects as retriable and the publisher is declared again on the next connection.
 */
export class RabbitTarget implements Target {
  readonly producer: string;
  private readonly inFlight: InFlight;
  private readonly confirmTimeoutMs: number;
  private readonly compression: SubEntryCompression;
  /** The connection this publisher is declared on, once declaring it succeeded. */
  private declared: Promise<Live> | undefined;
  /** Counts losses (and the close): see `publish`. */
  private epoch = 0;
  private closed = false;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly link: ReconnectingConnection,
    private readonly publisherId: number,
    readonly stream: string,
    options: TargetOptions,
    private readonly onClose: () => void,
  ) {
    this.producer = options.producer;
    if (typeof this.producer !== 'string' || this.producer.length === 0) {
      throw new ConfigError('producer', 'must be a non-empty string', options.producer);
    }
    const maxInFlight = options.maxInFlight ?? 64;
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
      throw new ConfigError('maxInFlight', 'must be a positive integer', options.maxInFlight);
    }
    this.confirmTimeoutMs = options.confirmTimeoutMs ?? 30_000;
    if (!(this.confirmTimeoutMs > 0)) {
      throw new ConfigError('confirmTimeoutMs', 'must be positive', options.confirmTimeoutMs);
    }
    this.compression = options.compression ?? 'none';
    this.inFlight = new InFlight(maxInFlight);
    this.unsubscribe = link.onLoss((reason) => this.forget(`connection lost (${reason})`));
  }

  /** Largest write, as `writeSize` counts it, that fits in the negotiated frame_max. */
  get maxWriteBytes(): number {
    return maxWriteBytes(this.frameMax);
  }

  async lastPublishingId(): Promise<bigint> {
    const response = await this.link.request<QueryPublisherResponse>(
      new QueryPublisherRequest({ stream: this.stream, publisherRef: this.producer }),
      this.confirmTimeoutMs,
    );
    if (!response.ok) {
      throw new StreamWindowsError(
        `querying the last publishing id of producer '${this.producer}' on stream ` +
          `'${this.stream}' failed (code ${response.code}): ${codeName(response.code)}`,
      );
    }
    return response.sequence;
  }

  /** Scans the stream for a result of this producer: see ./target-history.ts for the cost. */
  hasPublished(): Promise<boolean> {
    return producerHasPublished(
      this.link.params,
      this.stream,
      this.producer,
      this.confirmTimeoutMs,
    );
  }

  async publish(publishingId: bigint, messages: readonly Uint8Array[]): Promise<void> {
    if (this.closed) throw this.error(publishingId, false, 'the target is closed');
    // Taken before any await: a publish made before a loss (or close) must never be sent
    // after it. Its predecessors were failed at the loss; sent now, it could be stored
    // while they are not, and the broker would then discard them as duplicates on retry.
    const epoch = this.epoch;
    if (publishingId < 0n || publishingId > MAX_PUBLISHING_ID) {
      throw new ConfigError('publishingId', 'must be an unsigned 64-bit integer', publishingId);
    }
    if (messages.length === 0) {
      throw new ConfigError('messages', 'must hold at least one message', messages.length);
    }
    const frame = publishFrame(this.publisherId, publishingId, messages, this.compression);
    if (frame.length > this.frameMax) {
      throw this.error(
        publishingId,
        false,
        `the write takes ${frame.length} bytes, over the broker's frame_max of ${this.frameMax}`,
      );
    }
    await this.inFlight.slot();
    let live: Live;
    try {
      this.checkEpoch(epoch, publishingId);
      live = await this.declare();
      this.checkEpoch(epoch, publishingId);
    } catch (error) {
      this.inFlight.release();
      if (!(error instanceof DeclareFailed)) throw error;
      throw this.error(publishingId, error.retriable, error.message, error.code);
    }
    if (this.inFlight.has(publishingId)) {
      this.inFlight.release();
      throw this.error(
        publishingId,
        false,
        'a publish with this id is already awaiting its confirm',
      );
    }
    const confirmed = this.inFlight.open(publishingId, this.confirmTimeoutMs, () => {
      // A broker that confirms nothing for this long is hung or cut off without the socket
      // noticing; a fresh connection is the way back (everything in flight is re-sent).
      this.link.abandon(live, `publish ${publishingId} was not confirmed in time`);
      return this.error(publishingId, true, `no confirm within ${this.confirmTimeoutMs} ms`);
    });
    sendFrame(live.connection, frame).catch((error: unknown) =>
      this.inFlight.fail(publishingId, this.error(publishingId, true, describe(error))),
    );
    return confirmed;
  }

  /** Rejects a publish whose epoch ended (connection lost, stream changed, target closed). */
  private checkEpoch(epoch: number, publishingId: bigint): void {
    if (this.epoch === epoch) return;
    throw this.closed
      ? this.error(publishingId, false, 'the target was closed before the publish was sent')
      : this.error(publishingId, true, 'connection lost before the publish was sent');
  }

  /** Stops publishing: rejects what is in flight and removes the publisher from the broker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe();
    const declared = this.declared;
    this.forget('the target was closed');
    const live = await declared?.catch(() => undefined);
    live?.router.unregister(this.publisherId);
    if (live !== undefined) {
      await this.link
        .request<Response>(new DeletePublisherRequest(this.publisherId), this.confirmTimeoutMs)
        .catch(() => undefined); // the connection may be gone; the publisher went with it
    }
    // Only now may the id be handed out again: the broker no longer knows it.
    this.onClose();
  }

  private get frameMax(): number {
    return this.link.frameMax;
  }

  /** Declares the publisher on the live connection unless it is declared there already. */
  private declare(): Promise<Live> {
    if (this.declared !== undefined) return this.declared;
    const declaring: Promise<Live> = this.declareOnce().catch((error: unknown) => {
      // Only this attempt's own failure: a later declaration may be in place by now.
      if (this.declared === declaring) this.declared = undefined;
      throw error;
    });
    this.declared = declaring;
    return declaring;
  }

  private async declareOnce(): Promise<Live> {
    let live: Live;
    let response: Response;
    try {
      live = await this.link.ready(this.confirmTimeoutMs);
      live.router.register(this.publisherId, {
        stream: this.stream,
        confirmed: (ids) => {
          for (const id of ids) this.inFlight.confirm(id);
        },
        failed: (id, code) => void this.failed(id, code),
        streamChanged: (code) => void this.streamChanged(code),
      });
      response = await this.link.request<Response>(
        new DeclarePublisherRequest({
          stream: this.stream,
          publisherId: this.publisherId,
          publisherRef: this.producer,
        }),
        this.confirmTimeoutMs,
      );
    } catch (error) {
      throw new DeclareFailed(true, `declaring the producer failed: ${describe(error)}`);
    }
    if (!response.ok) {
      throw new DeclareFailed(
        isRetriablePublishCode(response.code),
        `declaring the producer failed: ${codeName(response.code)}`,
        response.code,
      );
    }
    return live;
  }

  /**
   * The broker refused a publish. "Publisher does not exist" means the broker dropped our
   * publisher (its stream was deleted or moved): whether a retry can help depends on whether
   * the stream is still there, so that is asked before the publish is rejected.
   */
  private async failed(publishingId: bigint, code: number): Promise<void> {
    if (code === PUBLISHER_DOES_NOT_EXIST) {
      this.epoch++; // publishes made before are not sent to a publisher declared again
      this.declared = undefined;
      if (!(await this.streamExists())) code = STREAM_DOES_NOT_EXIST;
    }
    this.inFlight.fail(
      publishingId,
      this.error(publishingId, isRetriablePublishCode(code), codeName(code), code),
    );
  }

  /**
   * The broker dropped this publisher because its stream changed. It reports a deleted
   * stream as "not available", as it does a leader election, so the stream's existence is
   * what tells a final loss from a passing one.
   */
  private async streamChanged(code: number): Promise<void> {
    this.epoch++; // publishes made before are not sent to a publisher declared again
    this.declared = undefined;
    const final = !(await this.streamExists());
    this.forget(
      `the broker dropped the producer: ${codeName(final ? STREAM_DOES_NOT_EXIST : code)}`,
      final ? STREAM_DOES_NOT_EXIST : code,
    );
  }

  private async streamExists(): Promise<boolean> {
    try {
      const response = await this.link.request<MetadataResponse>(
        new MetadataRequest({ streams: [this.stream] }),
        this.confirmTimeoutMs,
      );
      return response.streamInfos.some(
        (info) => info.streamName === this.stream && info.responseCode !== STREAM_DOES_NOT_EXIST,
      );
    } catch {
      return true; // unknown: let the retry find out
    }
  }

  /**
   * The publisher is gone from the broker's view (connection lost, stream changed): what was
   * in flight will never be confirmed. A stream that no longer exists is final; anything else
   * may recover.
   */
  private forget(reason: string, code?: number): void {
    this.epoch++;
    this.declared = undefined;
    const retriable = code === undefined || code !== STREAM_DOES_NOT_EXIST;
    this.inFlight.failAll((id) => this.error(id, retriable && !this.closed, reason, code));
  }

  private error(
    publishingId: bigint,
    retriable: boolean,
    reason: string,
    code?: number,
  ): PublishError {
    return new PublishError(this.stream, publishingId, retriable, reason, code);
  }
}

/** Declaring the publisher failed; `publish` turns it into a `PublishError` for its id. */
class DeclareFailed extends Error {
  constructor(
    readonly retriable: boolean,
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}
