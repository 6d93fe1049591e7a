import { setTimeout as sleep } from 'node:timers/promises';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { GroupObserver, ReadStart, Source, SourceChunk } from '../../ports/ports.js';
import { checkLogger, type Logger } from '../../common/logger.js';
import { timerMs } from '../../common/timer-duration.js';
import { checkReference, checkStreamName } from '../../common/stream-protocol.js';
import {
  ConfigError,
  SourceDeactivatedError,
  SourceError,
  StreamWindowsError,
  describe,
  isRetriable,
} from '../../common/errors.js';
import { backoffDelay, backoffDelays, type BackoffDelays } from '../backoff-delays.js';
import { endOffset } from './source-end-offset.js';
import { chunkTimestampAt } from './chunk-timestamp.js';
import {
  Subscription,
  type ActivationStart,
  type SingleActiveOptions,
} from './source-subscription.js';
import { resolveReadStart } from '../../ports/read-start.js';
import {
  checkAddressResolver,
  type AddressResolver,
  type MemberReach,
} from '../cluster/node-connection.js';
import { KnownNodes } from '../cluster/known-nodes.js';
import { queryStoredOffset, storeOffset } from './stored-offset.js';
import { nodeName, type NodeAddress, type StreamMembers } from '../cluster/stream-members.js';

/** The probe gets half the bound to be answered: much less, and a busy node looks frozen. */
const MIN_STALL_TIMEOUT_MS = 1_000;

/** How a source re-subscribes after a lost connection (targets reconnect with ConnectOptions). */
export interface SourceReconnectOptions {
  /** Consecutive failed attempts before `read` gives up with a retriable SourceError. */
  readonly attempts?: number;
  /** Delay before the first retry; doubles per failed attempt up to `maxDelayMs`. */
  readonly initialDelayMs?: number;
  /** The longest delay between two attempts, default 5,000 ms. */
  readonly maxDelayMs?: number;
}

/** The options of a RabbitMQ source: the connection, how nodes are reached, flow, reconnection and single active consumer. */
export interface RabbitSourceOptions {
  /**
   * Where the broker is (rabbitmq-stream-js-client's connection settings): on a cluster, any
   * node; each read asks it where the stream's members are and reads from a replica.
   */
  readonly connection: ClientParams;
  /** Where to connect to reach a node (see `AddressResolver`); default: as advertised. */
  readonly addressResolver?: AddressResolver | undefined;
  /**
   * The cluster's nodes tried in turn while the one of `connection` is down, and told of the
   * members each read meets: `connect()`'s for `rabbit.source()`. Default: the members this
   * source meets.
   */
  readonly knownNodes?: KnownNodes | undefined;
  /**
   * A read whose node sends nothing for this long (no chunk, and no answer to the query sent
   * halfway through) reads again from its next offset on another member: a frozen node holds
   * a job up for about this long (see ./silence-watch.ts). Default 10 s; at least 1 s. A quiet
   * stream is not a silent node: its node answers the query.
   */
  readonly stallTimeoutMs?: number;
  /** Chunks the broker may send ahead of the reader (the memory bound), default 8. */
  readonly credit?: number;
  /** How a read whose connection broke reconnects before it fails. */
  readonly reconnect?: SourceReconnectOptions;
  /** Read as a single active consumer of this group (one instance reads, others stand by). */
  readonly singleActive?: SingleActiveOptions;
  /**
   * Bound on connecting, subscribing and closing, default 10 s. Connecting tries the nodes
   * that may serve it (the URL's and the known ones, then the stream's replicas) as
   * `connectTimeoutMs` says (see `ConnectOptions`): a node that does not answer costs 500 ms.
   */
  readonly timeoutMs?: number;
  /**
   * Hears of each retry (warn, with its delay and cause) and of reading again after retries
   * (info). Pino's method shape; default silent, or `connect()`'s logger for `rabbit.source()`.
   */
  readonly logger?: Logger;
}

/**
 * The `Source` port over a RabbitMQ stream. Every `read` has its own connection and
 * subscription, so several readers never share a socket; chunks are handed over as slices
 * of the Deliver frames (./deliver-chunk.ts), never decoded here.
 *
 * A lost connection is retried with exponential backoff and the subscription resumes at
 * the next undelivered offset, so the reader sees each offset once and in order. After
 * `reconnect.attempts` consecutive failures, or on an error that retrying cannot fix
 * (stream deleted, access refused, malformed chunk), `read` throws: the engine restarts
 * from its resume point.
 *
 * With `singleActive` the reader joins the broker's consumer group and reads only while the
 * broker keeps it active (see `Source.read` for the contract). Once activated, a lost
 * connection fails the read (retriable) instead of resuming here: another member may have
 * been activated meanwhile, so the runner starts again from its resume point.
 *
 * `close()` matters only with `singleActive`: a reader told to step down stays in its group
 * for the next read (up to `timeoutMs`), and closing leaves it at once.
 */
export class RabbitSource implements Source {
  readonly group: string | undefined;
  private readonly credit: number;
  private readonly attempts: number;
  private readonly delays: BackoffDelays;
  private readonly timeoutMs: number;
  private readonly stallTimeoutMs: number;
  private readonly logger: Logger;
  private readonly broker: string;
  private readonly resolver: AddressResolver | undefined;
  /** Asked where the stream is while the URL's node is down; told every member met. */
  private readonly knownNodes: KnownNodes;
  private readonly reach: MemberReach;
  /**
   * A single active source's group membership kept between reads: after a step-down the
   * subscription stands by for the next read, for at most `timeoutMs`, instead of leaving
   * the group and joining again at its end (which on a super-stream partition would move the
   * active member around the group again).
   */
  private standby: { subscription: Subscription; timer: NodeJS.Timeout } | undefined;
  /** The node the last stalled read was on: tried last by the reads after it. */
  private avoid: NodeAddress | undefined;
  /** The members the stalled read met, for the next read only (a direct connection). */
  private lastMembers: StreamMembers | undefined;

  // ES private: a source that is logged or spread shows no password.
  readonly #connection: ClientParams;
  readonly #singleActive: SingleActiveOptions | undefined;

  constructor(
    readonly stream: string,
    options: RabbitSourceOptions,
  ) {
    checkStreamName('stream', stream, options.connection.vhost);
    const credit = options.credit ?? 8;
    if (!Number.isInteger(credit) || credit < 1 || credit > 0xffff) {
      throw new ConfigError('credit', 'must be an integer from 1 to 65535', options.credit);
    }
    this.credit = credit;
    const attempts = options.reconnect?.attempts ?? 10;
    if (!Number.isInteger(attempts) || attempts < 1) {
      throw new ConfigError('reconnect.attempts', 'must be an integer >= 1', attempts);
    }
    this.attempts = attempts;
    this.delays = backoffDelays('reconnect.', options.reconnect ?? {});
    this.timeoutMs = timerMs('timeoutMs', options.timeoutMs ?? 10_000);
    this.stallTimeoutMs = checkStallTimeoutMs(options.stallTimeoutMs ?? 10_000);
    this.logger = checkLogger('logger', options.logger);
    this.broker = `${options.connection.hostname}:${options.connection.port}`;
    const groupName = options.singleActive?.name;
    if (options.singleActive !== undefined && (typeof groupName !== 'string' || groupName === '')) {
      throw new ConfigError('singleActive.name', 'must be a non-empty string', groupName);
    }
    if (groupName !== undefined) checkReference('singleActive.name', groupName);
    this.group = groupName;
    this.resolver = checkAddressResolver(options.addressResolver);
    const superStream = options.singleActive?.superStream;
    if (superStream !== undefined) {
      checkStreamName('singleActive.superStream', superStream, options.connection.vhost);
    }
    this.knownNodes = options.knownNodes ?? new KnownNodes();
    this.reach = { addressResolver: this.resolver, knownNodes: this.knownNodes };
    this.#connection = options.connection;
    this.#singleActive = options.singleActive;
  }

  // The port's methods are own, bound properties, as the plain object this factory used to
  // return had: a wrapper that spreads a source (`{ ...source, endOffset }`) or takes a method
  // out keeps them.
  readonly read = (
    from: ReadStart,
    signal: AbortSignal,
    group?: GroupObserver,
  ): AsyncIterable<SourceChunk> => this.chunks(from, signal, group);

  readonly endOffset = (): Promise<bigint> =>
    endOffset(this.#connection, this.stream, this.timeoutMs, this.reach);

  /** Asked on the stream's leader, on a connection of its own (./stored-offset.ts). */
  readonly storedOffset = (reference: string): Promise<bigint | undefined> =>
    queryStoredOffset(this.#connection, this.stream, reference, this.timeoutMs, this.reach);

  /** A read of its own, never in the consumer group (./chunk-timestamp.ts). */
  readonly timestampAt = (offset: bigint): Promise<number | undefined> => {
    const plain = new RabbitSource(this.stream, {
      connection: this.#connection,
      addressResolver: this.resolver,
      knownNodes: this.knownNodes,
      timeoutMs: this.timeoutMs,
      stallTimeoutMs: this.stallTimeoutMs,
      credit: 1, // one chunk is read: the broker sends no more ahead
    });
    return chunkTimestampAt(plain, offset, this.timeoutMs);
  };

  /** Resolves once the leader answers it back (./stored-offset.ts). */
  readonly storeOffset = (reference: string, offset: bigint): Promise<void> =>
    storeOffset(this.#connection, this.stream, reference, offset, this.timeoutMs, this.reach);

  /** Leaves the consumer group at once, when a reader told to step down still waits in it. */
  readonly close = async (): Promise<void> => {
    await this.takeStandby()?.close();
  };

  private async *chunks(
    from: ReadStart,
    signal: AbortSignal,
    group?: GroupObserver,
  ): AsyncIterable<SourceChunk> {
    const singleActive = this.#singleActive;
    // A plain source may begin at once; a single active one starts where its activation
    // answers (the subscribe's own offset is then unused).
    let next: bigint | 'first' =
      typeof from === 'function' && singleActive !== undefined
        ? 'first'
        : await resolveReadStart(from);
    const start: ActivationStart = typeof from === 'function' ? from : () => Promise.resolve(next);
    let failures = 0;
    // Told once per read: joining again after a connection lost before activation is no news.
    let toldStandby = false;
    while (!signal.aborted) {
      let subscription: Subscription;
      try {
        subscription = this.takeStandby() ?? (await this.open(next));
      } catch (error) {
        if (!retriable(error)) throw error;
        if (++failures >= this.attempts) throw this.gaveUp(error, next);
        await this.backoff(error, failures, next, signal);
        continue;
      }
      // TypeScript keeps the narrowing from before the awaits above, which may have aborted it.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      if (signal.aborted) {
        // Aborted while connecting: the listener below would never fire.
        await subscription.close();
        return;
      }
      if (singleActive !== undefined) {
        // Registered (the subscribe was answered), and not activated before `attach` answers.
        if (!toldStandby) group?.standby(singleActive.name);
        toldStandby = true;
        subscription.attach(start);
      }
      const stop = (): void => void subscription.close();
      signal.addEventListener('abort', stop, { once: true });
      let steppedDown = false;
      try {
        for (;;) {
          const chunk = await subscription.take();
          if (chunk === undefined) return;
          // Only a delivery proves the broker is back: a broker that accepts and then drops
          // every subscription must still run out of attempts.
          if (failures > 0) {
            this.logger.info(
              { broker: this.broker, stream: this.stream, retries: failures, offset: String(next) },
              `reading '${this.stream}' again`,
            );
          }
          failures = 0;
          next = chunk.firstOffset + BigInt(chunk.count);
          yield chunk;
        }
      } catch (error) {
        // A frozen node is still named a member by the others, and holds up their answers
        // to the Metadata query: the next read goes to another member it met, directly.
        if (subscription.stalled) {
          this.avoid = subscription.node;
          this.lastMembers = subscription.members;
        }
        steppedDown = error instanceof SourceDeactivatedError;
        // Once activated, another member may have taken over meanwhile: the reader must
        // start again from its resume point, not from here.
        if (steppedDown || !retriable(error) || subscription.activated) throw error;
        if (++failures >= this.attempts) throw this.gaveUp(error, next);
        await this.backoff(error, failures, next, signal);
      } finally {
        signal.removeEventListener('abort', stop);
        if (steppedDown) this.answerWhenAborted(subscription, signal);
        else await subscription.close();
      }
    }
  }

  private async open(next: bigint | 'first'): Promise<Subscription> {
    const members = this.lastMembers;
    this.lastMembers = undefined;
    const subscription = await Subscription.open(this.#connection, {
      stream: this.stream,
      from: next,
      credit: this.credit,
      connectTimeoutMs: this.timeoutMs,
      stallTimeoutMs: this.stallTimeoutMs,
      avoid: this.avoid,
      members,
      addressResolver: this.resolver,
      knownNodes: this.knownNodes,
      ...(this.#singleActive === undefined ? {} : { singleActive: this.#singleActive }),
    });
    this.logger.debug(
      {
        broker: this.broker,
        stream: this.stream,
        node: nodeName(subscription.node),
        offset: String(next),
      },
      `reading '${this.stream}' on ${nodeName(subscription.node)}`,
    );
    return subscription;
  }

  private takeStandby(): Subscription | undefined {
    const kept = this.standby;
    this.standby = undefined;
    if (kept === undefined) return undefined;
    clearTimeout(kept.timer);
    if (kept.subscription.usable) return kept.subscription;
    void kept.subscription.close(); // lost while standing by: join again
    return undefined;
  }

  /**
   * The contract of a step-down: the broker gets its answer (and activates the next member)
   * only when the reader's signal aborts, which the runner does once its confirms landed.
   */
  private answerWhenAborted(subscription: Subscription, signal: AbortSignal): void {
    const release = (): void => {
      // Standing by at once: a read that comes before the answers are written takes it.
      void subscription.releaseStepDown();
      void this.takeStandby()?.close(); // at most one standing by
      this.standby = {
        subscription,
        timer: setTimeout(() => void this.takeStandby()?.close(), this.timeoutMs),
      };
    };
    if (signal.aborted) release();
    else signal.addEventListener('abort', release, { once: true });
  }

  /**
   * Out of attempts: still retriable for the engine, which resumes from its own resume point
   * after its own backoff, so an outage longer than ours does not end the job.
   */
  private gaveUp(error: unknown, next: bigint | 'first'): SourceError {
    return new SourceError(
      this.stream,
      true,
      `no connection after ${this.attempts} attempts: ${describe(error)}`,
      next === 'first' ? undefined : next,
    );
  }

  private backoff(
    error: unknown,
    failures: number,
    next: bigint | 'first',
    signal: AbortSignal,
  ): Promise<void> {
    const delayMs = backoffDelay(this.delays, failures);
    this.logger.warn(
      {
        broker: this.broker,
        stream: this.stream,
        retry: failures,
        delayMs,
        offset: String(next),
        cause: describe(error),
      },
      `reading '${this.stream}' again in ${delayMs} ms`,
    );
    return sleep(delayMs, undefined, { signal }).catch(() => undefined);
  }
}

/** A RabbitMQ source of `stream` (the public factory; `connect()` has `rabbit.source()`). */
export function rabbitSource(stream: string, options: RabbitSourceOptions): RabbitSource {
  return new RabbitSource(stream, options);
}

/** `value` as a `stallTimeoutMs`: a timer duration of at least `MIN_STALL_TIMEOUT_MS`. */
export function checkStallTimeoutMs(value: unknown): number {
  const stallTimeoutMs = timerMs('stallTimeoutMs', value);
  if (stallTimeoutMs < MIN_STALL_TIMEOUT_MS) {
    throw new ConfigError('stallTimeoutMs', `must be at least ${MIN_STALL_TIMEOUT_MS} ms`, value);
  }
  return stallTimeoutMs;
}

/**
 * Connection failures and lost subscriptions are worth retrying; refusals (of the
 * subscription, or of the connection: AccessRefusedError) and bad data are not.
 */
function retriable(error: unknown): boolean {
  // Ours say whether; anything else is the client's or the socket's, about the connection.
  return !(error instanceof StreamWindowsError) || isRetriable(error);
}
