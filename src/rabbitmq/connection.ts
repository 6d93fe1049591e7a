import type { ClientParams } from 'rabbitmq-stream-js-client';
import { CreateStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/create_stream_request.js';
import { DeleteStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_stream_request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import type { Source } from '../core/ports.js';
import { ConfigError, StreamWindowsError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';
import { parseStreamUrl } from './connection-url.js';
import { ReconnectingConnection, type ReconnectOptions } from './gaps/reconnect.js';
import {
  STREAM_ALREADY_EXISTS,
  STREAM_DOES_NOT_EXIST,
  codeName,
  isRetriableCode,
} from '../common/stream-protocol.js';
import { rabbitSource, type RabbitSourceOptions } from './source.js';
import { RabbitTarget, type TargetOptions } from './target.js';

export interface ConnectOptions extends ReconnectOptions {
  /** Bound on stream management requests (create, delete), default 10 s. */
  readonly requestTimeoutMs?: number;
}

/** Retention settings of a new stream (RabbitMQ's `x-` stream arguments). */
export interface StreamOptions {
  /** Drop segments older than this, e.g. '7D', '12h' (RabbitMQ's max-age syntax). */
  readonly maxAge?: string;
  /** Drop the oldest segments beyond this total size. */
  readonly maxLengthBytes?: number;
  readonly maxSegmentSizeBytes?: number;
}

/** A stream protocol command was refused by the broker. */
export class StreamCommandError extends StreamWindowsError {
  override readonly name = 'StreamCommandError';
  override readonly code = 'STREAM_COMMAND_REFUSED';
  /** Whether trying again later may succeed (the response-code table's verdict). */
  readonly retriable: boolean;
  constructor(
    readonly command: string,
    readonly stream: string,
    readonly responseCode: number,
  ) {
    super(
      `${command} of stream '${stream}' failed (code ${responseCode}): ${codeName(responseCode)}`,
    );
    this.retriable = isRetriableCode(responseCode);
  }
}

/** Publisher ids are one byte in the protocol: a connection holds at most 256 publishers. */
const MAX_PUBLISHERS = 256;

/**
 * A RabbitMQ broker reached over the stream protocol. Targets made here share one connection
 * that reconnects by itself; each source opens its own connections (./source.ts), so a slow
 * reader never holds up confirms.
 */
export class RabbitMQ {
  private readonly usedPublisherIds = new Set<number>();
  private readonly targets = new Set<RabbitTarget>();
  private readonly requestTimeoutMs: number;

  private constructor(
    readonly params: ClientParams,
    private readonly link: ReconnectingConnection,
    requestTimeoutMs: number,
  ) {
    this.requestTimeoutMs = requestTimeoutMs;
  }

  /** @internal Use `connect()`. Settings are checked before anything connects. */
  static async open(params: ClientParams, options: ConnectOptions): Promise<RabbitMQ> {
    const requestTimeoutMs = timerMs('requestTimeoutMs', options.requestTimeoutMs ?? 10_000);
    return new RabbitMQ(
      params,
      await ReconnectingConnection.open(params, options),
      requestTimeoutMs,
    );
  }

  /** The `Target` port for `stream`, publishing as the named producer `options.producer`. */
  target(stream: string, options: TargetOptions): RabbitTarget {
    const publisherId = this.freePublisherId();
    const target = new RabbitTarget(this.link, publisherId, stream, options, () => {
      this.usedPublisherIds.delete(publisherId);
      this.targets.delete(target);
    });
    this.usedPublisherIds.add(publisherId);
    this.targets.add(target);
    return target;
  }

  /**
   * The `Source` port for `stream`, on this broker (see ./source.ts for the options); it logs
   * to `connect()`'s logger unless given one.
   */
  source(stream: string, options: Omit<RabbitSourceOptions, 'connection'> = {}): Source {
    return rabbitSource(stream, { logger: this.link.logger, ...options, connection: this.params });
  }

  /** Creates a stream; resolves as well when it exists already (with whatever settings it has). */
  async createStream(stream: string, options: StreamOptions = {}): Promise<void> {
    const response = await this.link.request<Response>(
      new CreateStreamRequest({
        stream,
        arguments: {
          ...(options.maxAge === undefined ? {} : { 'max-age': options.maxAge }),
          ...(options.maxLengthBytes === undefined
            ? {}
            : { 'max-length-bytes': options.maxLengthBytes }),
          ...(options.maxSegmentSizeBytes === undefined
            ? {}
            : { 'stream-max-segment-size-bytes': options.maxSegmentSizeBytes }),
        },
      }),
      this.requestTimeoutMs,
    );
    if (!response.ok && response.code !== STREAM_ALREADY_EXISTS) {
      throw new StreamCommandError('create', stream, response.code);
    }
  }

  /** Deletes a stream and everything in it; resolves as well when there is no such stream. */
  async deleteStream(stream: string): Promise<void> {
    const response = await this.link.request<Response>(
      new DeleteStreamRequest(stream),
      this.requestTimeoutMs,
    );
    if (!response.ok && response.code !== STREAM_DOES_NOT_EXIST) {
      throw new StreamCommandError('delete', stream, response.code);
    }
  }

  /** Drops the shared connection as a network failure would; it reconnects. For tests. */
  dropConnectionForTesting(): void {
    this.link.drop();
  }

  /** Closes every target made here (rejecting what they have in flight) and the connection. */
  async close(): Promise<void> {
    await Promise.all([...this.targets].map((target) => target.close()));
    await this.link.close();
  }

  private freePublisherId(): number {
    for (let id = 0; id < MAX_PUBLISHERS; id++) {
      if (!this.usedPublisherIds.has(id)) return id;
    }
    throw new ConfigError(
      'target',
      `can be opened at most ${MAX_PUBLISHERS} times per connection; close unused targets or connect again`,
      this.targets.size + 1,
    );
  }
}

/**
 * Connects to RabbitMQ's stream port, given a URL such as
 * `rabbitmq-stream://guest:guest@127.0.0.1:5552/` (RABBITMQ_STREAM_URL) or the client's
 * connection settings. Fails when the broker cannot be reached now, unless `waitForBrokerMs`
 * gives it time to come up; a refused user, password or virtual host fails at once with
 * AccessRefusedError. Once connected, a lost connection is re-established in the background
 * (reported to `logger`).
 */
export function connect(
  where: string | ClientParams,
  options: ConnectOptions = {},
): Promise<RabbitMQ> {
  return RabbitMQ.open(typeof where === 'string' ? parseStreamUrl(where) : where, options);
}
