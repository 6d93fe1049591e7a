import { Offset, type ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { ExchangeCommandVersionsRequest } from 'rabbitmq-stream-js-client/dist/requests/exchange_command_versions_request.js';
import { SubscribeRequest } from 'rabbitmq-stream-js-client/dist/requests/subscribe_request.js';
import type { SubscribeResponse } from 'rabbitmq-stream-js-client/dist/responses/subscribe_response.js';
import type { SourceChunk } from '../../ports/ports.js';
import {
  RetentionGapError,
  SourceDeactivatedError,
  SourceError,
  describe,
} from '../../common/errors.js';
import { parseDeliver } from './deliver-chunk.js';
import { OK, codeName, isRetriableCode } from '../../common/stream-protocol.js';
import { queryStreamStats } from './stream-stats.js';
import { abandon, socketOf } from '../gaps/client-socket.js';
import { routeDeliverFrames } from '../gaps/consume-raw-chunks.js';
import { answerConsumerUpdate, type ConsumerUpdate } from '../gaps/consumer-update.js';
import { CreditGrants } from '../gaps/grant-credit.js';
import {
  advertisedNode,
  openMemberConnection,
  type MemberReach,
  type MemberRole,
} from '../cluster/node-connection.js';
import { StreamCommandError } from '../stream-command-error.js';
import { SilenceWatch } from './silence-watch.js';
import { nodeName, type NodeAddress, type StreamMembers } from '../cluster/stream-members.js';

/**
 * Single active consumer: of the readers subscribed under one `name` on a stream, the broker
 * lets one read; the others stand by. Where the active one starts is the `from` of its
 * `read`, asked when the broker activates it (pass a function to read the resume point then).
 */
export interface SingleActiveOptions {
  /** Consumer group name (the broker's "consumer reference"); the same on every instance. */
  readonly name: string;
  /**
   * The super stream the stream is a partition of. The subscription then names it
   * (`super-stream` property) and RabbitMQ picks the active member as the partition's index
   * rem the group's size, moving it as members join and leave; without it the first member
   * to join is active until it leaves.
   */
  readonly superStream?: string;
}

/** Where an activated single active consumer starts, asked at that moment. */
export type ActivationStart = () => Promise<bigint | 'first'>;

export interface SubscriptionOptions extends MemberReach {
  readonly stream: string;
  /**
   * First offset to deliver; earlier messages of the first chunk are cut off. 'first': the
   * first offset the stream still holds. 'last': the stream's last chunk of messages
   * (osiris skips tracking chunks for it; with none, it waits for the next one).
   * `{ timestamp }`: the first chunk stamped at or after it (epoch ms, above 0); with none,
   * osiris waits at the stream's end for the next one.
   */
  readonly from: bigint | 'first' | 'last' | { readonly timestamp: number };
  /** Chunks the broker may send ahead of the reader: the bound on buffered chunks. */
  readonly credit: number;
  readonly singleActive?: SingleActiveOptions;
  /**
   * Bound on each step of opening it: each connection attempt (the URL's node, a fallback, a
   * member, each try through the address resolver), the Metadata query, and the subscribe.
   */
  readonly connectTimeoutMs: number;
  /**
   * When given, a node that sends nothing for this long (no chunk, and no answer to the probe
   * sent halfway) fails the subscription as lost, `stalled` (./silence-watch.ts).
   */
  readonly stallTimeoutMs?: number | undefined;
  /**
   * The member to read on: a 'replica' (default; the leader's node takes every write already),
   * or the 'leader', whose committed end is the stream's (./source-end-offset.ts).
   */
  readonly role?: MemberRole;
  /** A node found stalled before: connected to only when no other member can be. */
  readonly avoid?: NodeAddress | undefined;
  /** Where the members were last seen, to connect to one without asking (see `MemberReach`). */
  readonly members?: StreamMembers | undefined;
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

/**
 * The broker refused the subscription; `retriable` when it may accept it later. Named by
 * where it was to start: an offset, or the spec ('first', 'last', a timestamp) it asked for.
 */
export class SubscribeError extends SourceError {
  override readonly name = 'SubscribeError';
  override readonly code = 'SUBSCRIBE_REFUSED';
  constructor(
    stream: string,
    /** Where it was to start (`SubscriptionOptions.from`). */
    from: bigint | 'first' | 'last' | { readonly timestamp: number },
    /** The broker's response code. */
    readonly responseCode: number,
    retriable: boolean,
  ) {
    super(
      stream,
      retriable,
      `subscribing${startSpec(from)} failed with code ${responseCode} (${codeName(responseCode)})`,
      typeof from === 'bigint' ? from : undefined,
    );
  }
}

/** A start other than an offset (which the message names already), as the error says it. */
function startSpec(from: SubscriptionOptions['from']): string {
  if (typeof from === 'bigint') return '';
  if (typeof from === 'string') return ` from '${from}'`;
  return ` at timestamp ${from.timestamp} (${new Date(from.timestamp).toISOString()})`;
}

const SUBSCRIPTION_ID = 0;

/**
 * One subscription on its own connection: the raw Deliver frames become `SourceChunk`s in
 * a queue the reader drains with `take()`. Credit is granted one chunk for each chunk the
 * reader takes (written once per turn of the event loop), so at most `credit` chunks are
 * ever buffered.
 *
 * A single active subscription delivers only between an activation it answered and the next
 * step-down. It answers an activation once a reader is attached (`attach`), with where that
 * reader's start says; a step-down stops delivery at once, drops the queued chunks and makes
 * `take()` throw `SourceDeactivatedError`, and is answered only by `releaseStepDown()`. The
 * subscription stays a member of its group meanwhile and after, standing by for the next
 * activation, so the group's order (which decides who is active on a partition) is kept.
 */
export class Subscription {
  private readonly queue: SourceChunk[] = [];
  /** Credit for the chunks taken this turn, granted in one frame at its end. */
  private readonly credit: CreditGrants;
  private failure: Error | undefined;
  private closed = false;
  private wake: (() => void) | undefined;
  /** Messages before this offset are dropped; moves forward with every delivery. */
  private from: bigint;
  /** One past the last message `take()` handed out, for the reader's errors. */
  private taken: bigint | undefined;
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
  private watch: SilenceWatch | undefined;
  private stalledNode = false;

  // Single active consumer state (a plain subscription always delivers).
  private delivering: boolean;
  /** Where the attached reader starts when activated; undefined while no reader is attached. */
  private start: ActivationStart | undefined;
  /** An activation that came while no reader was attached: answered by the next `attach`. */
  private heldActivation: number | undefined;
  /** Whether the attached reader's start was asked: it is activated, or about to be. */
  private startAsked = false;
  /** Counts step-downs, so an activation answered after one starts no delivery. */
  private stepDowns = 0;
  /** Step-downs not answered yet (correlation ids), answered by `releaseStepDown()`. */
  private unanswered: number[] = [];
  private deactivated: SourceDeactivatedError | undefined;
  /** Answers go out one at a time, in the order the broker asked. */
  private answers: Promise<void> = Promise.resolve();

  private constructor(
    private readonly connection: Connection,
    private readonly options: SubscriptionOptions,
    /** Where the stream's members were when this subscribed. */
    readonly members: StreamMembers,
  ) {
    this.from = typeof options.from === 'bigint' ? options.from : 0n;
    this.delivering = options.singleActive === undefined;
    this.credit = new CreditGrants(connection, SUBSCRIPTION_ID, options.credit, () =>
      this.granting(),
    );
  }

  static async open(params: ClientParams, options: SubscriptionOptions): Promise<Subscription> {
    // The listeners exist before the subscription does: they reach it through `ref`.
    const ref: { subscription?: Subscription } = {};
    const role = options.role ?? 'replica';
    const { connection, members } = await openMemberConnection(params, options.stream, role, {
      addressResolver: options.addressResolver,
      knownNodes: options.knownNodes,
      avoid: options.avoid,
      members: options.members,
      timeoutMs: options.connectTimeoutMs,
      listeners: {
        connection_closed: () => ref.subscription?.lose('connection closed'),
        metadata_update: (update) => {
          if (update.metadataInfo.stream === options.stream) {
            ref.subscription?.lose(`stream metadata changed (code ${update.metadataInfo.code})`);
          }
        },
      },
    }).catch((error: unknown) => {
      // Refused like a subscription: the stream is not there (or not yet available).
      if (!(error instanceof StreamCommandError)) throw error;
      throw new SubscribeError(options.stream, options.from, error.responseCode, error.retriable);
    });
    const subscription = new Subscription(connection, options, members);
    ref.subscription = subscription;
    routeDeliverFrames(
      connection,
      {
        deliver: (frame) => subscription.deliver(frame),
        consumerUpdate: (update) => subscription.update(update),
      },
      (error) => subscription.lose(`reading from the connection failed: ${describe(error)}`),
    );
    try {
      await subscription.withTimeout(subscription.subscribe(), 'subscribe');
    } catch (error) {
      await subscription.close();
      throw error;
    }
    subscription.watchSilence();
    return subscription;
  }

  /**
   * The next chunk; undefined once `close()` was called. Throws `SubscriptionLostError`,
   * `SubscribeError`, `SourceDeactivatedError` or `MalformedChunkError` (./deliver-chunk.ts).
   */
  async take(): Promise<SourceChunk | undefined> {
    for (;;) {
      if (this.closed) return undefined;
      if (this.deactivated !== undefined) throw this.deactivated;
      if (this.checking !== undefined) {
        await this.checking;
        continue;
      }
      const chunk = this.queue.shift();
      if (chunk !== undefined) {
        this.grant(1);
        this.taken = chunk.firstOffset + BigInt(chunk.count);
        return chunk;
      }
      if (this.failure !== undefined) throw this.failure;
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  /**
   * Single active: a reader is here to read from where `start` says once activated. An
   * activation that came while none was attached is answered now.
   */
  attach(start: ActivationStart): void {
    this.start = start;
    this.startAsked = false;
    this.deactivated = undefined;
    this.taken = undefined;
    const held = this.heldActivation;
    this.heldActivation = undefined;
    if (held !== undefined) this.answerActivation(held, start);
  }

  /** The node it reads on, as the node advertises itself: a replica where there is one. */
  get node(): NodeAddress {
    return advertisedNode(this.connection);
  }

  /** Whether it still delivers or stands by: not closed, lost or failed. */
  get usable(): boolean {
    return !this.closed && this.failure === undefined;
  }

  /** Whether it was lost to a node that answered nothing (see `stallTimeoutMs`). */
  get stalled(): boolean {
    return this.stalledNode;
  }

  /** Whether the attached reader's start was asked (it is, or was about to be, active). */
  get activated(): boolean {
    return this.startAsked;
  }

  /**
   * Answers the step-downs the broker is waiting for (it then activates the next member) and
   * stands by for the next reader. Resolves once the answers are written.
   */
  releaseStepDown(): Promise<void> {
    this.start = undefined;
    const stepDowns = this.unanswered;
    this.unanswered = [];
    for (const correlationId of stepDowns) {
      this.answer(() => answerConsumerUpdate(this.connection, correlationId, this.from));
    }
    return this.answers;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.abort();
    this.watch?.stop();
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
      if (singleActive.superStream !== undefined) {
        properties['super-stream'] = singleActive.superStream;
      }
    } else if (typeof from === 'bigint') {
      // A single active subscription starts where its activation answers, checked then.
      this.requested = from;
    }
    const response = await this.connection.sendAndWait<SubscribeResponse>(
      new SubscribeRequest({
        subscriptionId: SUBSCRIPTION_ID,
        stream,
        offset: offsetSpec(from),
        credit,
        properties,
      }),
    );
    if (response.code !== OK) {
      throw new SubscribeError(
        stream,
        typeof from === 'bigint' ? this.from : from,
        response.code,
        isRetriableCode(response.code), // e.g. a leader election passes by itself
      );
    }
  }

  private deliver(frame: Buffer): void {
    if (this.closed || this.failure !== undefined || !this.delivering) return;
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

  /** The reader's own failure (where to start could not be read), passed on as it is. */
  private fail(error: unknown): void {
    if (this.closed || this.failure !== undefined) return;
    this.failure = error instanceof Error ? error : new Error(describe(error));
    this.notify();
  }

  private lose(reason: string): void {
    if (this.closed || this.failure !== undefined) return;
    this.watch?.stop();
    this.failure = new SubscriptionLostError(this.options.stream, this.from, reason);
    this.notify();
  }

  /**
   * A frozen node keeps the connection open and sends nothing: without a watch the reader
   * would wait for the client's heartbeat (two missed 60 s intervals).
   */
  private watchSilence(): void {
    const { stallTimeoutMs } = this.options;
    if (stallTimeoutMs === undefined || this.closed || this.failure !== undefined) return;
    const watch = new SilenceWatch(stallTimeoutMs, {
      // Answered by the connection's own process on the node: stream queries (Metadata,
      // StreamStats) wait on the cluster, which one frozen node holds up for all.
      probe: () =>
        void this.connection
          .sendAndWait(new ExchangeCommandVersionsRequest([]))
          .catch(() => undefined),
      stalled: (silentMs) => {
        this.stalledNode = true;
        this.lose(
          `RabbitMQ node ${nodeName(this.node)} sent nothing for ${silentMs} ms, not even an ` +
            `answer to a probe (stallTimeoutMs: ${stallTimeoutMs})`,
        );
      },
    });
    socketOf(this.connection).on('data', () => watch.heard());
    this.watch = watch;
  }

  /** The broker made this reader the active one of its group, or tells it to step down. */
  private update({ correlationId, subscriptionId, active }: ConsumerUpdate): void {
    if (subscriptionId !== SUBSCRIPTION_ID || this.options.singleActive === undefined) return;
    // Closed, its reader is gone: asking its start would run the stopped job's resume point
    // (a target query after the job ended, which kept processes alive). Unanswered, the
    // broker hands the activation on once the connection is closed.
    if (this.closed) return;
    if (active) {
      if (this.start === undefined) this.heldActivation = correlationId;
      else this.answerActivation(correlationId, this.start);
      return;
    }
    // RabbitMQ closed this consumer's reader when it sent this: nothing more is delivered,
    // and what is queued must not be processed. Its credit is given back for the next
    // activation (the broker keeps credit given while inactive).
    this.stepDowns++;
    this.delivering = false;
    this.requested = undefined;
    this.grant(this.queue.length);
    this.queue.length = 0;
    this.unanswered.push(correlationId);
    const held = this.heldActivation;
    this.heldActivation = undefined;
    if (held !== undefined) {
      this.answer(() => answerConsumerUpdate(this.connection, held, this.from));
    }
    if (this.start === undefined) {
      void this.releaseStepDown(); // no reader: nothing under way to wait for
      return;
    }
    const { stream, singleActive } = this.options;
    this.deactivated ??= new SourceDeactivatedError(stream, singleActive.name, this.taken);
    this.notify();
  }

  /** Asks where `start` says, then answers the activation there and starts delivering. */
  private answerActivation(correlationId: number, start: ActivationStart): void {
    const stepDowns = this.stepDowns;
    this.startAsked = true;
    this.answer(async () => {
      let from: bigint | 'first';
      try {
        from = await start();
      } catch (error) {
        // Unanswered, the activation passes to the next member once the reader closes this.
        this.fail(error);
        return;
      }
      if (this.closed) return;
      if (stepDowns === this.stepDowns) {
        // Deliveries follow the answer: the broker starts its reader when it gets it.
        this.from = from === 'first' ? 0n : from;
        this.requested = from === 'first' ? undefined : from; // checked like a subscribe's
        this.delivering = true;
      }
      // Answered even when stepped down meanwhile: the broker waits for every answer.
      await answerConsumerUpdate(this.connection, correlationId, from);
    });
  }

  private answer(step: () => Promise<void>): void {
    this.answers = this.answers
      .then(step)
      .catch((error: unknown) =>
        this.lose(`answering the single-active-consumer update failed: ${describe(error)}`),
      );
  }

  private grant(chunks: number): void {
    if (!this.granting() || chunks === 0) return;
    this.credit.grant(chunks);
  }

  private granting(): boolean {
    return !this.closed && this.failure === undefined;
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

/** `from` as the client's offset spec. */
function offsetSpec(from: SubscriptionOptions['from']): Offset {
  if (from === 'first') return Offset.first();
  if (from === 'last') return Offset.last();
  if (typeof from === 'bigint') return Offset.offset(from);
  return Offset.timestamp(new Date(from.timestamp));
}
