import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import { DeletePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_publisher_request.js';
import { QueryPublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/query_publisher_request.js';
import type { QueryPublisherResponse } from 'rabbitmq-stream-js-client/dist/responses/query_publisher_response.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import type { SubEntryCompression } from '../../codecs/sub-entry.js';
import type { ResultWhere, Target } from '../../ports/ports.js';
import { maxWriteBytes, plainEntriesFit, writeRefusal } from '../../ports/write-size.js';
import {
  ConfigError,
  PublishError,
  ResumePointError,
  describe,
  refusedUntilResumed,
} from '../../common/errors.js';
import { timerMs } from '../../common/timer-duration.js';
import type { Live, ReconnectingConnection } from '../gaps/reconnect.js';
import {
  plainEntriesFrame,
  publishFrame,
  sendFrames,
  type PlainEntry,
} from '../gaps/raw-publish.js';
import {
  PRECONDITION_FAILED,
  PUBLISHER_DOES_NOT_EXIST,
  checkReference,
  codeName,
  isRetriableCode,
} from '../../common/stream-protocol.js';
import { InFlight } from './publish-in-flight.js';
import { TurnWrites } from '../turn-writes.js';
import { StreamCommandError } from '../stream-command-error.js';
import type { MemberReach } from '../cluster/node-connection.js';
import type { NodeAddress } from '../cluster/stream-members.js';
import { producerHasPublished } from './target-history.js';
import { lookUpResult } from './result-lookup.js';
import { LinkHintStore, ResultHintKeeper } from './result-hint.js';

/**
 * How long without a confirm before a due hint is stored: long enough that a producer
 * publishing back to back is hinted after its burst, short enough that others' writes since
 * its last result are few.
 */
const HINT_QUIET_MS = 50;

/** The options of `rabbit.target(stream, options)`: the producer name, and how writes are paced and confirmed. */
export interface TargetOptions {
  /** Producer name: the broker deduplicates on it. Stable across restarts, unique per target. */
  readonly producer: string;
  /** Publishes awaiting their confirm at once; `publish` waits for a slot beyond. Default 64. */
  readonly maxInFlight?: number;
  /**
   * A publish not confirmed within this long rejects with a retriable `PublishError` (the
   * engine then resumes from the broker's last publishing id). Also the deadline of the
   * target's requests (declare, resume point). Default 30 s; at most 2^31 - 1 ms.
   */
  readonly confirmTimeoutMs?: number;
  /** Compression of sub-entry batches (several messages under one id). Default 'none'. */
  readonly compression?: SubEntryCompression;
  /**
   * How often, at most, the target notes on its stream where its producer's latest confirmed
   * result lies (a hint, kept by RabbitMQ's server-side offset tracking under the reference
   * `stream-windows hint ["<stream>","<producer>"]`), so that a restart reads that result
   * without searching back through what other producers wrote after it. Each note is one
   * StreamStats request and one StoreOffset frame, never on a publish's way, and writes a
   * tracking chunk that takes an offset of the stream (readers never see it). Only a job's
   * target notes (one whose `lastPublishingId()` was asked, as every start of a job does), and
   * not before it has published for this long. Default 0: never. Off by default because the
   * tracking chunk lands among the results at a time-dependent place: a later stage reading
   * this target carries its offsets in its own results, so with hints on, that stage's target
   * is no longer byte-identical across runs that crashed or were timed differently (each
   * stored stream still replays exactly). Turn it on (2000 is a good value) for a target no
   * stage reads by offset, where restarts must not grow with what other producers wrote. A
   * hint already stored (by an earlier run that kept them) is read at a restart either way.
   */
  readonly resultHintMs?: number;
}

/** What the target uses of the reconnecting connection (unit tests script it by hand). */
export type PublisherLink = Pick<
  ReconnectingConnection,
  'frameMax' | 'ready' | 'request' | 'requestOn' | 'onLoss' | 'abandon' | 'params' | 'node'
>;

/**
 * The `Target` port over a RabbitMQ stream: one named producer (deduplicating publisher) on
 * a connection that may be shared with other targets and that reconnects by itself.
 *
 * Each publish is one Publish frame with one entry under the caller's publishing id (see
 * ../gaps/raw-publish.ts) and settles with that id's confirm or error, routed to this
 * publisher alone (../gaps/publish-confirms.ts). The frames made in one turn of the event
 * loop leave together, in order, in one socket write at its end (../turn-writes.ts). When the
 * connection is lost, everything in flight rejects as retriable and the publisher is
 * declared again on the next connection.
 *
 * The fence: from the first failed publish, or the broker dropping the publisher, until
 * `lastPublishingId()` answers again, every publish is refused without being sent (the
 * `Target` contract). Sent, it could be stored while the failed one is not, and on resume
 * the broker would discard the failed one as a duplicate of the later id: a lost result.
 */
export class RabbitTarget implements Target {
  readonly producer: string;
  private readonly inFlight: InFlight;
  /** Writes awaiting their confirm at once (`TargetOptions.maxInFlight`). */
  readonly maxInFlight: number;
  private readonly confirmTimeoutMs: number;
  private readonly compression: SubEntryCompression;
  /**
   * Where the producer's result hint is read (./result-hint.ts): at every restart, whatever
   * `resultHintMs` (reading writes nothing, and a hint is checked, never trusted); undefined
   * without a producer name.
   */
  private readonly hintStore: LinkHintStore | undefined;
  /** What keeps the hint up to date; undefined when this target notes none. */
  private readonly hintKeeper: ResultHintKeeper | undefined;
  /** The connection this publisher is declared on, once declaring it succeeded. */
  private declared: Promise<Live> | undefined;
  /** Settles once the latest declaration has: declarations go one at a time. */
  private lastDeclaration: Promise<unknown> = Promise.resolve();
  /** The connection whose confirms and errors reach this target (see `listenOn`). */
  private listeningOn: Live | undefined;
  /** Counts fences, connection losses and the close: see `publish`. */
  private epoch = 0;
  /** Why publishing is refused until `lastPublishingId()` answers; undefined: not fenced. */
  private fenced: string | undefined;
  private closed = false;
  private readonly unsubscribe: () => void;
  /** Frames past every check, in flight, written together at the end of this turn. */
  private readonly unwritten = new TurnWrites<Unwritten>((writes) => this.writeFrames(writes));

  constructor(
    private readonly link: PublisherLink,
    private readonly publisherId: number,
    readonly stream: string,
    options: TargetOptions,
    private readonly onClose: () => void,
    /** How its scans of the stream (`hasPublished`, `readResult`) reach a member: `connect()`'s. */
    private readonly reach: MemberReach = {},
  ) {
    this.producer = options.producer;
    // The empty name is a producer's without deduplication (`rabbit.producer` unnamed);
    // `rabbit.target` refuses it for a job.
    if (typeof this.producer !== 'string') {
      throw new ConfigError('producer', 'must be a non-empty string', options.producer);
    }
    checkReference('producer', this.producer); // the stream's name is checked by its maker
    const maxInFlight = options.maxInFlight ?? 64;
    if (!Number.isInteger(maxInFlight) || maxInFlight < 1) {
      throw new ConfigError('maxInFlight', 'must be a positive integer', options.maxInFlight);
    }
    this.maxInFlight = maxInFlight;
    this.confirmTimeoutMs = timerMs('confirmTimeoutMs', options.confirmTimeoutMs ?? 30_000);
    this.compression = options.compression ?? 'none';
    this.inFlight = new InFlight(maxInFlight);
    const hintMs = timerMs('resultHintMs', options.resultHintMs ?? 0, true);
    if (this.producer !== '') {
      this.hintStore = new LinkHintStore(link, stream, this.producer, this.confirmTimeoutMs);
      if (hintMs > 0) {
        const pace = { everyMs: hintMs, quietMs: HINT_QUIET_MS };
        this.hintKeeper = new ResultHintKeeper(this.hintStore, pace);
      }
    }
    this.unsubscribe = link.onLoss((reason) => this.connectionLost(`connection lost (${reason})`));
  }

  /**
   * The node its publishes go to now, as the node advertises itself: on a cluster, the
   * stream's leader once the producer is declared. Undefined while disconnected.
   */
  get node(): NodeAddress | undefined {
    return this.link.node;
  }

  /** Largest write, as `writeSize` counts it, that fits in the negotiated frame_max. */
  get maxWriteBytes(): number {
    return maxWriteBytes(this.frameMax);
  }

  /**
   * The producer's last publishing id: the job's resume point. Answering re-arms a fenced
   * target, unless it was fenced again while the answer was on its way, and starts its result
   * hints (`TargetOptions.resultHintMs`).
   */
  async lastPublishingId(): Promise<bigint> {
    const epoch = this.epoch;
    const sequence = await this.lastPublishingIdOf(this.producer);
    if (this.epoch === epoch) this.fenced = undefined;
    this.hintKeeper?.enable();
    return sequence;
  }

  /**
   * Another name's last publishing id on this stream: the stream protocol's
   * QueryPublisherSequence takes any reference, declared or not.
   */
  async lastPublishingIdOf(producer: string): Promise<bigint> {
    checkReference('producer', producer);
    const response = await this.link.request<QueryPublisherResponse>(
      new QueryPublisherRequest({ stream: this.stream, publisherRef: producer }),
      this.confirmTimeoutMs,
    );
    if (!response.ok) {
      throw new ResumePointError(
        this.stream,
        producer,
        isRetriableCode(response.code),
        response.code,
        codeName(response.code),
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
      this.reach,
    );
  }

  /**
   * Searches the stream for this producer's result `publishingId`, on a replica of any node
   * that is up, from the producer's result hint when one is stored, else on from the first
   * chunk stamped at or after `where.writtenAfterMs`, else backward from the stream's end: see
   * ./result-lookup.ts for the cost.
   */
  async readResult(publishingId: bigint, where?: ResultWhere): Promise<Uint8Array | undefined> {
    const lookup = await lookUpResult(
      this.link.params,
      this.stream,
      this.producer,
      publishingId,
      this.confirmTimeoutMs,
      this.reach,
      await this.hintStore?.read(),
      where,
    );
    return lookup.message;
  }

  async publish(publishingId: bigint, messages: readonly Uint8Array[]): Promise<void> {
    const [confirmed] = await this.write([publishingId], () =>
      this.frameFor(publishingId, messages),
    );
    await confirmed;
    this.hintKeeper?.confirmed();
  }

  /**
   * Publishes each message under its own publishing id in ONE Publish frame (a producer's
   * batch: see StreamProducer), at most `maxInFlight` of them, fitting one frame (see
   * `plainEntriesFit`); each settles with its own confirm or error. Kept to the same order,
   * bound and fence as `publish`.
   */
  publishEach(entries: readonly PlainEntry[]): Promise<void>[] {
    const sent = this.write(
      entries.map((entry) => entry.publishingId),
      () => this.entriesFrameFor(entries),
    );
    return entries.map((_, i) =>
      sent.then(async (confirms) => {
        await confirms[i];
      }),
    );
  }

  /** Sends the frame of `ids` unless closed or fenced; resolves with their confirms once sent. */
  private async write(ids: readonly bigint[], frame: () => Buffer): Promise<Promise<void>[]> {
    const first = ids[0] ?? 0n;
    if (this.closed) throw this.error(first, false, 'the target is closed');
    if (this.fenced !== undefined) {
      throw this.error(first, true, refusedUntilResumed(this.fenced));
    }
    // Taken before any await: a publish made before a fence (or the close) must never be
    // sent after it, even if the fence is lifted again meanwhile.
    const epoch = this.epoch;
    try {
      return await this.send(epoch, ids, frame);
    } catch (error) {
      // Failures found while the publish is in flight fence at once where they are found;
      // this catches those found before sending.
      this.fence(describe(error));
      throw error;
    }
  }

  private async send(
    epoch: number,
    ids: readonly bigint[],
    frameOf: () => Buffer,
  ): Promise<Promise<void>[]> {
    const frame = frameOf();
    const first = ids[0] ?? 0n;
    // One wait for all: the frames leave in the order their slots were asked for.
    await this.inFlight.slot(ids.length);
    let live: Live;
    try {
      this.checkEpoch(epoch, first);
      live = await this.declare();
      this.checkEpoch(epoch, first);
    } catch (error) {
      this.inFlight.release(ids.length);
      if (!(error instanceof DeclareFailed)) throw error;
      throw this.error(first, error.retriable, error.message, error.code);
    }
    const taken = ids.find((id, i) => this.inFlight.has(id) || ids.indexOf(id) !== i);
    if (taken !== undefined) {
      this.inFlight.release(ids.length);
      throw this.error(taken, false, 'a publish with this id is already awaiting its confirm');
    }
    const confirms = ids.map((publishingId) =>
      this.inFlight.open(publishingId, this.confirmTimeoutMs, () => {
        const error = this.failure(
          publishingId,
          true,
          `no confirm within ${this.confirmTimeoutMs} ms`,
        );
        // A broker that confirms nothing for this long is hung or cut off without the socket
        // noticing; a fresh connection is the way back (everything in flight is re-sent).
        this.link.abandon(live, `publish ${publishingId} was not confirmed in time`);
        return error;
      }),
    );
    this.unwritten.add({ epoch, live, ids, confirms, frame });
    return confirms;
  }

  /**
   * Writes the frames held back, in one socket write. One whose epoch ended meanwhile (a
   * fence, the connection lost, the close) is not sent: it fails as it would have before
   * being held back, so nothing made before a fence leaves after it.
   */
  private writeFrames(writes: readonly Unwritten[]): void {
    const sendable = writes.filter((write) => this.stillSendable(write));
    // All on one connection: the publisher is declared on another only in a later epoch.
    const live = sendable[0]?.live;
    if (live === undefined) return;
    let sent: readonly Promise<void>[];
    try {
      sent = sendFrames(
        live.connection,
        sendable.map((write) => write.frame),
      );
    } catch (error) {
      // At the turn's end nobody would catch it: each held publish fails with it instead.
      sent = sendable.map(() => Promise.reject(error as Error));
    }
    sendable.forEach((write, i) => {
      sent[i]?.catch((error: unknown) => {
        this.failHeld(write, (id) => this.failure(id, true, describe(error)));
        const { ids } = write;
        // A frame the socket did not take whole breaks every frame after it: the connection
        // goes, with whatever else was written to it.
        this.link.abandon(live, `publish ${ids[0] ?? 0n} could not be written`);
      });
    });
  }

  /** Whether a held-back frame may still go; if not, its publishes fail with the reason. */
  private stillSendable(write: Unwritten): boolean {
    if (write.epoch === this.epoch) return true;
    this.failHeld(write, (id) => this.epochEnded(id));
    return false;
  }

  /**
   * Fails the publishes a held-back frame opened, by their own records: the same id may
   * have been published again since they settled (after a fence was lifted), and that
   * publish is not this frame's to fail.
   */
  private failHeld({ ids, confirms }: Unwritten, error: (id: bigint) => Error): void {
    ids.forEach((id, i) => {
      const confirm = confirms[i];
      if (confirm !== undefined) this.inFlight.failOpened(id, confirm, error(id));
    });
  }

  /** The Publish frame of a producer's batch, or why it cannot be sent. */
  private entriesFrameFor(entries: readonly PlainEntry[]): Buffer {
    const first = entries[0]?.publishingId ?? 0n;
    if (entries.length === 0 || entries.length > this.maxInFlight) {
      throw this.error(
        first,
        false,
        `a batch holds 1 to maxInFlight (${this.maxInFlight}) messages, given ${entries.length}`,
      );
    }
    for (const { publishingId, message } of entries) {
      const refusal = writeRefusal(publishingId, [message], this.maxWriteBytes);
      if (refusal !== undefined)
        throw this.error(publishingId, false, refusal.reason, refusal.code);
    }
    const lengths = entries.map((entry) => entry.message.length);
    if (!plainEntriesFit(lengths, this.maxWriteBytes)) {
      throw this.error(
        first,
        false,
        `the batch of ${entries.length} messages does not fit in one frame`,
      );
    }
    return plainEntriesFrame(this.publisherId, entries);
  }

  /**
   * The Publish frame for this write, or why it cannot be sent. The uncompressed size counts
   * too: RabbitMQ 4.3.5 and later refuse one sub-entry batch whose declared uncompressed
   * size exceeds `stream.max_uncompressed_sub_entry_batch_size` while storing the frames
   * after it (see the README, "How the guarantee works"); bounded by frame_max here, no
   * batch of ours can be refused that way unless the broker's setting is below frame_max.
   */
  private frameFor(publishingId: bigint, messages: readonly Uint8Array[]): Buffer {
    const refusal = writeRefusal(publishingId, messages, this.maxWriteBytes);
    if (refusal !== undefined) {
      throw this.error(publishingId, false, refusal.reason, refusal.code);
    }
    const frame = publishFrame(this.publisherId, publishingId, messages, this.compression);
    if (frame.length > this.frameMax) {
      // gzip makes incompressible data slightly larger.
      throw this.error(
        publishingId,
        false,
        `the write takes ${frame.length} bytes compressed, over the broker's frame_max of ${this.frameMax}`,
      );
    }
    return frame;
  }

  /** Rejects a publish whose epoch ended (fenced, connection lost, closed) before it was sent. */
  private checkEpoch(epoch: number, publishingId: bigint): void {
    if (this.epoch !== epoch) throw this.epochEnded(publishingId);
  }

  /** The error of a publish whose epoch ended before it was sent. */
  private epochEnded(publishingId: bigint): PublishError {
    if (this.closed) {
      return this.error(publishingId, false, 'the target was closed before the publish was sent');
    }
    return this.error(
      publishingId,
      true,
      this.fenced === undefined
        ? 'the connection was lost before the publish was sent'
        : refusedUntilResumed(this.fenced),
    );
  }

  /**
   * Removes the publisher from the broker and keeps the target (the `Target` port's
   * `release`): what is in flight fails as retriable, the target is fenced, and the next
   * declaration waits for the deletion, so it cannot be overtaken by it.
   */
  async release(): Promise<void> {
    if (this.closed) return;
    const declared = this.declared;
    this.forget('the producer was released');
    if (declared === undefined) return;
    const deleted = declared.then(
      (live) => this.deletePublisher(live),
      () => undefined,
    );
    this.lastDeclaration = deleted;
    await deleted;
  }

  /** Stops publishing: rejects what is in flight and removes the publisher from the broker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.hintKeeper?.close();
    this.unsubscribe();
    const declared = this.declared;
    this.forget('the target was closed');
    const live = await declared?.catch(() => undefined);
    this.listeningOn?.router.unregister(this.publisherId);
    if (live !== undefined) await this.deletePublisher(live);
    // Only now may the id be handed out again: the broker no longer knows it.
    this.onClose();
  }

  /** Removes the publisher from the broker over `live` (for `release` and `close`). */
  private async deletePublisher(live: Live): Promise<void> {
    await this.link
      .requestOn<Response>(
        live,
        new DeletePublisherRequest(this.publisherId),
        this.confirmTimeoutMs,
      )
      .catch(() => undefined); // the connection may be gone; the publisher went with it
  }

  private get frameMax(): number {
    return this.link.frameMax;
  }

  /** Declares the publisher on the live connection unless it is declared there already. */
  private declare(): Promise<Live> {
    if (this.declared !== undefined) return this.declared;
    // After the one before: two at once could each leave a publisher, one of them unknown here.
    const declaring: Promise<Live> = this.lastDeclaration
      .then(() => this.declareOnce())
      .catch((error: unknown) => {
        // Only this attempt's own failure: a later declaration may be in place by now.
        if (this.declared === declaring) this.declared = undefined;
        // At once: a publish made after this failure must not declare again and be sent
        // before the publishes waiting on this declaration have failed.
        this.fence(describe(error));
        throw error;
      });
    this.declared = declaring;
    this.lastDeclaration = declaring.catch(() => undefined);
    return declaring;
  }

  private async declareOnce(): Promise<Live> {
    let live: Live;
    let response: Response;
    try {
      live = await this.link.ready(this.confirmTimeoutMs);
      this.listenOn(live);
      response = await this.declareOn(live);
      if (response.code === PRECONDITION_FAILED) {
        // This publisher id is declared on this connection already: by an earlier
        // declaration of ours whose outcome was given up (the connection it started on was
        // lost meanwhile, say). The id is this target's alone, so that publisher is too.
        await this.link.requestOn<Response>(
          live,
          new DeletePublisherRequest(this.publisherId),
          this.confirmTimeoutMs,
        );
        response = await this.declareOn(live);
      }
    } catch (error) {
      // Finding the leader may be refused: no such stream (final), or none elected (retriable).
      const refused = error instanceof StreamCommandError ? error : undefined;
      throw new DeclareFailed(
        refused?.retriable ?? true,
        `declaring the producer failed: ${describe(error)}`,
        refused?.responseCode,
      );
    }
    if (!response.ok) {
      throw new DeclareFailed(
        isRetriableCode(response.code),
        `declaring the producer failed: ${codeName(response.code)}`,
        response.code,
      );
    }
    return live;
  }

  private declareOn(live: Live): Promise<Response> {
    return this.link.requestOn<Response>(
      live,
      new DeclarePublisherRequest({
        stream: this.stream,
        publisherId: this.publisherId,
        publisherRef: this.producer,
      }),
      this.confirmTimeoutMs,
    );
  }

  /**
   * Routes `live`'s confirms and errors for this publisher id here, and no longer those of
   * the connection before: a late refusal or stream change there (the broker often sends
   * two metadata updates) is about a publisher that is gone, and the ids sent again on the
   * new connection are the same, so it would fail writes the new publisher holds.
   */
  private listenOn(live: Live): void {
    if (this.listeningOn !== live) this.listeningOn?.router.unregister(this.publisherId);
    this.listeningOn = live;
    live.router.register(this.publisherId, {
      stream: this.stream,
      confirmed: (ids) => {
        for (const id of ids) this.inFlight.confirm(id);
      },
      failed: (id, code) => this.refused(id, code),
      streamChanged: (code) =>
        this.forget(`the broker dropped the producer: ${codeName(code)}`, code),
    });
  }

  /**
   * The broker refused a publish. "Publisher does not exist" means the broker dropped our
   * publisher (its stream was deleted, restarted or moved): it confirms nothing more of what
   * we sent, and refuses every later frame for it until it is declared again (which the
   * fence holds off until the job has re-read its resume point). Whether the stream is still
   * there is for `lastPublishingId()` to tell.
   *
   * A refusal of a write no longer in flight is stale: the write already failed with the
   * publisher it was sent to, and the broker refuses the rest of such writes before it
   * answers our next declaration. Taken as new, it would fence the target again and undo a
   * declaration the broker has (declaring again then fails with "precondition failed").
   */
  private refused(publishingId: bigint, code: number): void {
    if (!this.inFlight.has(publishingId)) return;
    if (code === PUBLISHER_DOES_NOT_EXIST) {
      this.forget(`the broker dropped the producer: ${codeName(code)}`, code);
      return;
    }
    const error = this.failure(publishingId, isRetriableCode(code), codeName(code), code);
    this.inFlight.fail(publishingId, error);
  }

  /**
   * The connection is lost, and the publisher with it. What was in flight fails, which
   * fences the target; with nothing in flight nothing can be lost, so the target is not
   * fenced and the next publish declares the publisher again on the next connection.
   */
  private connectionLost(reason: string): void {
    if (this.inFlight.size > 0) {
      this.forget(reason);
      return;
    }
    this.epoch++; // a publish made before the loss is not sent on the next connection
    this.declared = undefined;
  }

  /**
   * The publisher is gone from the broker's view (connection lost with publishes in flight,
   * stream changed, target closed): what was in flight will never be confirmed.
   */
  private forget(reason: string, code?: number): void {
    this.fence(reason);
    this.declared = undefined;
    const retriable = !this.closed && (code === undefined || isRetriableCode(code));
    this.inFlight.failAll((id) => this.error(id, retriable, reason, code));
  }

  /**
   * Refuses every later publish until `lastPublishingId()` answers; publishes waiting for a
   * slot or the declaration are refused by their epoch. Keeps the first reason.
   */
  private fence(reason: string): void {
    if (this.fenced !== undefined) return;
    this.fenced = reason;
    this.epoch++;
  }

  /** The error of a publish that failed in flight: it fences the target first. */
  private failure(
    publishingId: bigint,
    retriable: boolean,
    reason: string,
    code?: number,
  ): PublishError {
    this.fence(`publish ${publishingId}: ${reason}`);
    return this.error(publishingId, retriable, reason, code);
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

/** A Publish frame past every check, its publishes in flight, not yet written. */
interface Unwritten {
  /** The target's epoch when it was checked: it goes only if that epoch has not ended. */
  readonly epoch: number;
  readonly live: Live;
  readonly ids: readonly bigint[];
  /** The promises `InFlight.open` returned for `ids`, in the same order. */
  readonly confirms: readonly Promise<void>[];
  readonly frame: Buffer;
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
