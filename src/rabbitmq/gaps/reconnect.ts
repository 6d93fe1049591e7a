import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { BrokerUnavailableError, ConfigError, describe, isRetriable } from '../../common/errors.js';
import { checkLogger, type Logger } from '../../common/logger.js';
import { timerMs } from '../../common/timer-duration.js';
import { backoffDelay, backoffDelays, type BackoffDelays } from '../backoff-delays.js';
import { abandon, socketOf } from './client-socket.js';
import {
  advertisedNode,
  openAnyNode,
  openNodeConnection,
  type AddressResolver,
  type MemberReach,
} from '../cluster/node-connection.js';
import { nodeName, type NodeAddress } from '../cluster/stream-members.js';
import { PublishRouter } from './publish-confirms.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): no automatic reconnection. When the socket closes,
 * the client's connection stays closed, its publishers keep accepting `send()` calls that
 * go nowhere (`Connection.send` never settles on a closed socket), and requests waiting
 * for a response wait forever (`sendAndWait` has no timeout).
 *
 * WORKAROUND: this keeps one live client connection and replaces it when it closes:
 * reconnecting with exponential backoff until `close()`, and telling its users of each loss
 * (`onLoss`) so that they fail what was in flight on the old connection and declare their
 * publishers again on the next one. Every request goes through `request()`, which gives up
 * after a deadline and then drops the connection: one that misses a deadline is not trusted.
 * A lost connection is abandoned (./client-socket.ts): the client would keep its heartbeat
 * timer running, and the process alive. The first connection may wait for a broker that is
 * not up yet (`waitForBrokerMs`) with the same backoff.
 * test/integration/rabbitmq-connection.test.ts shows a stock client connection staying down
 * after a socket loss while this one comes back; when the client reconnects by itself, this
 * can go.
 */

export interface ReconnectOptions {
  /** Delay before the first reconnection attempt; doubles per failure up to `maxDelayMs`. */
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
  /**
   * Gives up connecting (TCP, authentication, tuning, open) after this long, default 10 s.
   * With several nodes to choose from (the URLs and the members met since), the nodes are
   * tried "happy eyeballs" fashion: the next one starts beside those under way when they have
   * not answered within 500 ms (or this bound shared among them, if less), or at once when
   * one fails; the first to finish its handshake is kept and the others are closed. The
   * whole try stays within this bound, and a node that did not answer in time is tried after
   * the others for a minute. A connection to one given node (a stream's leader, for writes)
   * has no other to try: a frozen one costs the whole bound.
   */
  readonly connectTimeoutMs?: number;
  /**
   * How long the first connection may wait for a broker that is not up yet, default 0: fail
   * at the first attempt. A failed attempt is tried again after the backoff above until this
   * much time has passed (no attempt starts later; the last one has its `connectTimeoutMs`),
   * then it fails with a BrokerUnavailableError naming the wait, the attempts and the last
   * cause. A refusal (wrong user, password or virtual host) fails at once all the same.
   */
  readonly waitForBrokerMs?: number;
  /**
   * Gives up connecting (the attempt under way, or the wait for the next one): `open` rejects
   * with a BrokerUnavailableError saying it was aborted, and leaves nothing running. It has
   * no effect once connected; `close()` ends a reconnection instead.
   */
  readonly signal?: AbortSignal;
  /**
   * Hears of each connection loss and each retry (warn, with its delay and cause) and of each
   * connection made (info, with the retries it took). Pino's method shape; default silent.
   */
  readonly logger?: Logger;
}

/** A connection held to one node of a cluster (see ../cluster/node-connection.ts). */
export interface NodeTarget {
  readonly node: NodeAddress;
  readonly addressResolver?: AddressResolver | undefined;
  readonly clusterSize: number;
}

/** One live client connection and the confirm router installed on it. */
export interface Live {
  readonly connection: Connection;
  readonly router: PublishRouter;
  /**
   * Rejects with BrokerUnavailableError once this connection is lost (never resolves): the
   * client leaves requests on a closed socket waiting forever, so every wait on this
   * connection races it and fails at the loss, not at its deadline.
   */
  readonly lost: Promise<never>;
}

export class ReconnectingConnection {
  private live: Live | undefined;
  /** Rejects the current connection's `lost`. */
  private markLost: (error: Error) => void = () => undefined;
  private closed = false;
  private lastError = '';
  /** Failed attempts since the connection was lost (or since the first attempt). */
  private failures = 0;
  private lostAt = 0;
  private lostNode: NodeAddress | undefined;
  private negotiatedFrameMax = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly closing = new AbortController();
  private readonly lossListeners = new Set<(reason: string) => void>();
  private readonly upWaiters = new Set<() => void>();
  private readonly backoff: BackoffDelays;
  private readonly connectTimeoutMs: number;
  private readonly waitForBrokerMs: number;
  /** Where losses and reconnections are reported; sources made on this connection use it too. */
  readonly logger: Logger;

  private constructor(
    /** Where the broker is; sources and scans open connections of their own with it. */
    readonly params: ClientParams,
    options: ReconnectOptions,
    /** The node to connect to, when not the one of `params`: a cluster member. */
    private readonly target?: NodeTarget,
    /** Without a target: the nodes tried in turn while the one of `params` cannot be reached. */
    private readonly fallbacks: MemberReach = {},
  ) {
    this.backoff = backoffDelays('', options);
    this.connectTimeoutMs = timerMs('connectTimeoutMs', options.connectTimeoutMs ?? 10_000);
    this.waitForBrokerMs = timerMs('waitForBrokerMs', options.waitForBrokerMs ?? 0, true);
    this.logger = checkLogger('logger', options.logger);
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
      throw new ConfigError('signal', 'must be an AbortSignal', options.signal);
    }
  }

  /**
   * Connects, waiting up to `waitForBrokerMs` for a broker that cannot be reached yet; by
   * default it fails at once: a broker that cannot be reached at first is a setup error.
   */
  static async open(
    params: ClientParams,
    options: ReconnectOptions = {},
    target?: NodeTarget,
    fallbacks?: MemberReach,
  ): Promise<ReconnectingConnection> {
    const link = new ReconnectingConnection(params, options, target, fallbacks);
    const { signal } = options;
    // close() ends the wait and the attempt under way, and leaves nothing running.
    const giveUp = (): void => void link.close();
    if (signal?.aborted === true) giveUp();
    signal?.addEventListener('abort', giveUp, { once: true });
    try {
      link.live = await link.firstConnection();
    } finally {
      signal?.removeEventListener('abort', giveUp);
    }
    return link;
  }

  /** frame_max negotiated with the broker on the latest connection, bytes. */
  get frameMax(): number {
    return this.negotiatedFrameMax;
  }

  get where(): string {
    return this.target === undefined
      ? `${this.params.hostname}:${this.params.port}`
      : nodeName(this.target.node);
  }

  /** The node the live connection is on, as it advertises itself; undefined while down. */
  get node(): NodeAddress | undefined {
    return this.live === undefined ? undefined : advertisedNode(this.live.connection);
  }

  /** The node the latest connection was on, also while reconnecting; undefined before one. */
  get lastNode(): NodeAddress | undefined {
    return this.node ?? this.lostNode;
  }

  /** Whether `live` is this link's connection now. */
  holds(live: Live): boolean {
    return this.live === live;
  }

  /** The live connection; waits (up to `timeoutMs`) while reconnecting. */
  async ready(timeoutMs: number): Promise<Live> {
    if (this.live !== undefined) return this.live;
    if (this.closed) throw new BrokerUnavailableError(`connection to ${this.where} is closed`);
    let wake = (): void => undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        wake = resolve;
        this.upWaiters.add(wake);
        timer = setTimeout(
          () =>
            reject(
              new BrokerUnavailableError(
                `no connection to RabbitMQ at ${this.where} for ${timeoutMs} ms` +
                  (this.lastError ? `: ${this.lastError}` : ''),
              ),
            ),
          timeoutMs,
        );
      });
    } finally {
      this.upWaiters.delete(wake);
      clearTimeout(timer);
    }
    return this.ready(timeoutMs);
  }

  /**
   * Sends a request and waits for its response, at most `timeoutMs`. The client resolves
   * some failed responses and rejects others with the bare response code; both come back
   * here as a resolved response so that callers check `ok` and `code` in one place.
   */
  async request<T extends Response>(request: Request, timeoutMs: number): Promise<T> {
    return this.requestOn(await this.ready(timeoutMs), request, timeoutMs);
  }

  /**
   * As `request`, on the connection `live` (one this link made) and on no other: what is
   * declared on a connection (a publisher) is asked about on that one. Fails at once when it
   * was lost.
   */
  async requestOn<T extends Response>(live: Live, request: Request, timeoutMs: number): Promise<T> {
    const { connection } = live;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.abandon(live, `request 0x${request.key.toString(16)} timed out`);
        reject(
          new BrokerUnavailableError(
            `RabbitMQ at ${this.where} did not answer request 0x${request.key.toString(16)} ` +
              `within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([
        connection.sendAndWait<T>(request).catch((code: unknown) => {
          if (typeof code === 'number') return { ok: false, code } as unknown as T;
          // A string the protocol cannot carry (./utf8-strings.ts): refused while the request
          // was encoded, before any byte of it was written; the connection is as good as before.
          if (code instanceof ConfigError) throw code;
          // The write failed (EPIPE on a socket the peer closed, before its close event):
          // the connection is as good as lost.
          this.abandon(live, `request 0x${request.key.toString(16)} failed: ${describe(code)}`);
          throw new BrokerUnavailableError(
            `request 0x${request.key.toString(16)} to RabbitMQ at ${this.where} failed: ` +
              describe(code),
            { cause: code },
          );
        }),
        deadline,
        live.lost,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Calls `onLoss` whenever the live connection is lost; returns the unsubscribe function. */
  onLoss(onLoss: (reason: string) => void): () => void {
    this.lossListeners.add(onLoss);
    return () => this.lossListeners.delete(onLoss);
  }

  /**
   * Abandons the current connection as a network failure would; a new one follows. For a
   * connection that stopped answering without closing (a hung broker or a silent network
   * partition), which the client does not detect: its heartbeat "closes" such a connection
   * by sending Close and waiting, forever, for the answer.
   */
  drop(reason = 'connection dropped'): void {
    if (this.live === undefined) return;
    // At once rather than on the socket's close event, so that no request or publish made
    // in between goes to the abandoned connection.
    this.lose(reason);
  }

  /** Drops `live` unless it was replaced already: a connection that missed a deadline. */
  abandon(live: Live, reason: string): void {
    if (this.live === live) this.drop(reason);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.closing.abort(); // a connection attempt under way
    for (const wake of this.upWaiters) wake(); // they find the link closed and give up
    const live = this.live;
    this.live = undefined;
    if (live === undefined) return;
    this.markLost(new BrokerUnavailableError(`connection to RabbitMQ at ${this.where} is closed`));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      live.connection.close({ closingCode: 0, closingReason: 'closed', manuallyClose: true }),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.connectTimeoutMs))),
    ]).catch(() => undefined);
    clearTimeout(timer);
    socketOf(live.connection).destroy(); // close() stopped the heartbeat, answered or not
  }

  private async firstConnection(): Promise<Live> {
    const started = Date.now();
    for (;;) {
      if (this.closed) throw this.gaveUp('aborted', started);
      let live: Live;
      try {
        live = await this.connectOnce();
      } catch (error) {
        // TypeScript keeps the loop top's narrowing; close() may have run during the await.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
        if (this.closed) throw this.gaveUp('aborted', started);
        this.failures++;
        this.lastError = describe(error);
        if (!isRetriable(error)) throw error; // a refusal: waiting does not change the answer
        const left = started + this.waitForBrokerMs - Date.now();
        if (left <= 0) {
          if (this.waitForBrokerMs === 0) throw error; // not waiting: the attempt's own error
          throw this.gaveUp('waited', started, error);
        }
        const delayMs = Math.min(backoffDelay(this.backoff, this.failures), left);
        this.reportRetry(this.failures, delayMs);
        await sleep(delayMs, undefined, { signal: this.closing.signal }).catch(() => undefined);
        continue;
      }
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- as in the catch
      if (this.closed) {
        abandon(live.connection);
        throw this.gaveUp('aborted', started);
      }
      this.logger.info(
        { broker: this.where, retries: this.failures, waitedMs: Date.now() - started },
        'connected to RabbitMQ',
      );
      this.failures = 0;
      return live;
    }
  }

  /** The first connection failed for good: `failures` attempts since `started`. */
  private gaveUp(
    how: 'waited' | 'aborted',
    started: number,
    cause?: unknown,
  ): BrokerUnavailableError {
    const elapsed = `${Date.now() - started} ms and ${this.failures} failed attempts`;
    return new BrokerUnavailableError(
      (how === 'waited'
        ? `no connection to RabbitMQ at ${this.where} after waiting ${elapsed} ` +
          `(waitForBrokerMs: ${this.waitForBrokerMs})`
        : `connecting to RabbitMQ at ${this.where} was aborted after ${elapsed}`) +
        (this.lastError === '' ? '' : `; the last one failed: ${this.lastError}`),
      cause === undefined ? undefined : { cause },
    );
  }

  /** Retry number `retry` (from 1), after a loss or a failed attempt, `delayMs` from now. */
  private reportRetry(retry: number, delayMs: number): void {
    this.logger.warn(
      { broker: this.where, retry, delayMs, cause: this.lastError },
      `connecting to RabbitMQ again in ${delayMs} ms`,
    );
  }

  private async connectOnce(): Promise<Live> {
    const listeners = {
      // Called from socket events only, so after `connection` is assigned.
      connection_closed: () => {
        if (this.live?.connection === connection) this.lose('connection closed');
      },
    };
    const connection: Connection =
      this.target === undefined
        ? await openAnyNode(this.params, {
            ...this.fallbacks,
            timeoutMs: this.connectTimeoutMs,
            listeners,
            signal: this.closing.signal,
          })
        : await openNodeConnection(this.params, this.target.node, {
            addressResolver: this.target.addressResolver,
            clusterSize: this.target.clusterSize,
            timeoutMs: this.connectTimeoutMs,
            listeners,
            signal: this.closing.signal,
          });
    this.negotiatedFrameMax = connection.maxFrameSize;
    const whenLost = new Promise<never>((_, reject) => (this.markLost = reject));
    whenLost.catch(() => undefined); // settled by whoever races it; unobserved otherwise
    let router: PublishRouter;
    try {
      router = new PublishRouter(connection, (error) => {
        if (this.live?.connection === connection) {
          this.lose(`reading from the connection failed: ${describe(error)}`);
        }
      });
    } catch (error) {
      // A client whose internals moved (ClientInternalsError): the open connection's heartbeat
      // timer would keep the process alive.
      abandon(connection);
      throw error;
    }
    return { connection, router, lost: whenLost };
  }

  private lose(reason: string): void {
    this.lostNode = this.node;
    // Its heartbeat timer would otherwise run on and keep the process alive.
    if (this.live !== undefined) abandon(this.live.connection);
    this.markLost(
      new BrokerUnavailableError(`connection to RabbitMQ at ${this.where} lost: ${reason}`),
    );
    this.live = undefined;
    this.lastError = reason;
    this.lostAt = Date.now();
    this.logger.warn({ broker: this.where, cause: reason }, 'connection to RabbitMQ lost');
    for (const listener of this.lossListeners) listener(reason);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    const retry = this.failures + 1;
    const delayMs = backoffDelay(this.backoff, retry);
    this.reportRetry(retry, delayMs);
    this.retryTimer = setTimeout(() => void this.reconnect(), delayMs);
  }

  private async reconnect(): Promise<void> {
    let live: Live;
    try {
      live = await this.connectOnce();
    } catch (error) {
      this.failures++;
      this.lastError = describe(error);
      this.scheduleReconnect();
      return;
    }
    if (this.closed) {
      abandon(live.connection);
      return;
    }
    this.live = live;
    this.logger.info(
      { broker: this.where, retries: this.failures + 1, downMs: Date.now() - this.lostAt },
      'reconnected to RabbitMQ',
    );
    this.failures = 0;
    for (const wake of this.upWaiters) wake();
  }
}

/** The client keeps its socket private; destroying it is the only way to abandon a connection. */
