// A connection for RabbitTarget that the test drives by hand: it records every frame and
// request the target writes, answers requests as told, and delivers confirms, publish errors,
// metadata updates and losses when the test says so, through the real PublishRouter (confirms
// and publish errors as raw frames on the socket, as the broker sends them).
import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import { DeletePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_publisher_request.js';
import { QueryPublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/query_publisher_request.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import {
  PUBLISH_CONFIRM_KEY,
  PUBLISH_ERROR_KEY,
  PublishRouter,
} from '../../../src/rabbitmq/gaps/publish-confirms.js';
import type { Live } from '../../../src/rabbitmq/gaps/reconnect.js';
import {
  RabbitTarget,
  type PublisherLink,
  type TargetOptions,
} from '../../../src/rabbitmq/write/target.js';

const PUBLISH_KEY = 0x0002;

/** One answer to a request: a response code, and for a resume-point query the id. */
export interface Answer {
  readonly code: number;
  readonly sequence?: bigint;
}

export class ScriptedLink implements PublisherLink {
  readonly frameMax = 1_048_576;
  /** Never dialled: only `hasPublished()` would open a connection of its own. */
  readonly params = { hostname: 'scripted', port: 0 } as ClientParams;
  readonly node = { host: 'scripted', port: 0 };
  /** Publishing ids of the Publish frames' entries written, in order. */
  readonly sent: bigint[] = [];
  /** The same, per Publish frame. */
  readonly frames: bigint[][] = [];
  /** Writes to the socket: frames written while it is corked count as one. */
  socketWrites = 0;
  /** When set, the socket refuses to be corked (as a client whose internals changed would). */
  socketBroken = false;
  /** Publisher declarations sent. */
  declarations = 0;
  /** Publisher deletions sent. */
  deletions = 0;
  /** Publisher ids declared per connection, as the broker keeps them. */
  private readonly declaredIds = new Map<Live, Set<number>>();
  private readyHeld: Promise<void> | undefined;
  /** What the next resume-point queries are answered; each waits for `answerQuery()` if empty. */
  private readonly queryAnswers: Answer[] = [];
  private readonly waitingQueries: ((answer: Answer) => void)[] = [];
  /** Requests the script never answers (as a Metadata request that is on its way). */
  readonly unanswered: Request[] = [];
  /** Each connection's listeners (the PublishRouter's), by connection. */
  private readonly listenersOf = new Map<Live, Map<string, (event: unknown) => void>>();
  /** Each connection's socket 'data' listeners (the router's), by connection. */
  private readonly socketReaders = new Map<Live, ((data: Buffer) => void)[]>();
  private readonly lossListeners = new Set<(reason: string) => void>();
  private live: Live;

  constructor() {
    this.live = this.connect();
  }

  ready(): Promise<Live> {
    const held = this.readyHeld;
    this.readyHeld = undefined;
    return held === undefined ? Promise.resolve(this.live) : held.then(() => this.live);
  }

  /** The next `ready()` waits for the returned function (a leader lookup under way). */
  holdReady(): () => void {
    let release = (): void => undefined;
    this.readyHeld = new Promise<void>((resolve) => (release = resolve));
    return release;
  }

  request<T extends Response>(request: Request): Promise<T> {
    return this.requestOn(this.live, request);
  }

  /**
   * As the broker answers on `live`: a publisher id declared twice on one connection is
   * refused (0x11, precondition failed) until deleted; a lost connection answers nothing.
   */
  requestOn<T extends Response>(live: Live, request: Request): Promise<T> {
    if (live !== this.live) return Promise.reject(new Error('scripted: that connection is lost'));
    const declared = this.declaredIds.get(live) ?? new Set<number>();
    this.declaredIds.set(live, declared);
    if (request instanceof DeclarePublisherRequest) {
      this.declarations++;
      const { publisherId } = (request as unknown as { params: { publisherId: number } }).params;
      if (declared.has(publisherId)) return Promise.resolve(response<T>(0x11));
      declared.add(publisherId);
      return Promise.resolve(response<T>(1));
    }
    if (request instanceof DeletePublisherRequest) {
      this.deletions++;
      declared.delete((request as unknown as { publisherId: number }).publisherId);
      return Promise.resolve(response<T>(1));
    }
    if (request instanceof QueryPublisherRequest) {
      const scripted = this.queryAnswers.shift();
      if (scripted !== undefined)
        return Promise.resolve(response<T>(scripted.code, scripted.sequence));
      return new Promise((resolve) =>
        this.waitingQueries.push((answer) => resolve(response<T>(answer.code, answer.sequence))),
      );
    }
    this.unanswered.push(request);
    return new Promise<T>(() => undefined);
  }

  onLoss(listener: (reason: string) => void): () => void {
    this.lossListeners.add(listener);
    return () => this.lossListeners.delete(listener);
  }

  abandon(live: Live, reason: string): void {
    if (live === this.live) this.lose(reason);
  }

  /** Answers the next resume-point query (or the one waiting) with `answer`. */
  answerQuery(answer: Answer): void {
    const waiting = this.waitingQueries.shift();
    if (waiting === undefined) this.queryAnswers.push(answer);
    else waiting(answer);
  }

  /** A PublishConfirm frame on the live connection's socket, read as the broker sends it. */
  confirm(publisherId: number, ...publishingIds: bigint[]): void {
    const frame = Buffer.alloc(13 + 8 * publishingIds.length);
    frame.writeUInt32BE(frame.length - 4, 0);
    frame.writeUInt16BE(PUBLISH_CONFIRM_KEY, 4);
    frame.writeUInt16BE(1, 6);
    frame.writeUInt8(publisherId, 8);
    frame.writeUInt32BE(publishingIds.length, 9);
    publishingIds.forEach((id, i) => frame.writeBigUInt64BE(id, 13 + 8 * i));
    this.read(frame);
  }

  /**
   * A PublishError frame on connection `on` (default: the live one). "Publisher does not
   * exist" means the broker dropped the publisher there.
   */
  publishError(publisherId: number, publishingId: bigint, code: number, on = this.live): void {
    if (code === 0x12) this.declaredIds.get(on)?.delete(publisherId);
    const frame = Buffer.alloc(23);
    frame.writeUInt32BE(frame.length - 4, 0);
    frame.writeUInt16BE(PUBLISH_ERROR_KEY, 4);
    frame.writeUInt16BE(1, 6);
    frame.writeUInt8(publisherId, 8);
    frame.writeUInt32BE(1, 9);
    frame.writeBigUInt64BE(publishingId, 13);
    frame.writeUInt16BE(code, 21);
    this.read(frame, on);
  }

  /** The broker dropped the stream's publishers on the live connection, and says so. */
  metadataUpdate(stream: string, code: number): void {
    this.declaredIds.get(this.live)?.clear();
    this.emit('metadata_update', { metadataInfo: { stream, code } });
  }

  /** The connection is lost; the next one is up at once. Returns the lost one. */
  lose(reason = 'scripted loss'): Live {
    const lost = this.live;
    for (const listener of this.lossListeners) listener(reason);
    this.live = this.connect();
    return lost;
  }

  private emit(event: string, payload: unknown, on = this.live): void {
    this.listenersOf.get(on)?.get(event)?.(payload);
  }

  /** `data` arrives on the socket of connection `on`. */
  private read(data: Buffer, on = this.live): void {
    for (const listener of this.socketReaders.get(on) ?? []) listener(data);
  }

  private connect(): Live {
    const listeners = new Map<string, (event: unknown) => void>();
    const readers: ((data: Buffer) => void)[] = [() => undefined];
    // The target writes Publish frames to the client connection's socket itself
    // (src/rabbitmq/gaps/raw-publish.ts); frames written while it is corked leave in one write.
    let corks = 0;
    let corkedFrames = 0;
    const socket = {
      readyState: 'open',
      // The client's own listener, which the router takes frames from and hands the rest to;
      // a scripted connection sends the client nothing.
      listeners: () => readers,
      removeListener: (_event: string, listener: (data: Buffer) => void) =>
        readers.splice(readers.indexOf(listener), 1),
      on: (_event: string, listener: (data: Buffer) => void) => readers.push(listener),
      cork: () => {
        if (this.socketBroken) throw new Error('no socket to cork');
        corks++;
      },
      uncork: () => {
        corks--;
        if (corks > 0 || corkedFrames === 0) return;
        corkedFrames = 0;
        this.socketWrites++;
      },
      write: (frame: Buffer, written?: (error?: Error | null) => void) => {
        if (frame.readUInt16BE(4) === PUBLISH_KEY) {
          const ids = entryIds(frame);
          this.frames.push(ids);
          this.sent.push(...ids);
        }
        if (corks > 0) corkedFrames++;
        else this.socketWrites++;
        if (written !== undefined) process.nextTick(written);
        return true;
      },
    };
    const connection = {
      on: (event: string, listener: (payload: unknown) => void) => listeners.set(event, listener),
      socket,
    } as unknown as Connection;
    const live: Live = {
      connection,
      router: new PublishRouter(connection, (error) => {
        throw error;
      }),
      lost: new Promise(() => undefined),
    };
    this.listenersOf.set(live, listeners);
    this.socketReaders.set(live, readers);
    return live;
  }
}

/**
 * The publishing ids of a Publish frame's entries: each a plain message (uint32 size, top bit
 * clear) or a sub-entry batch (a type byte with the top bit set, then uint16 count, uint32
 * uncompressed size, uint32 size).
 */
function entryIds(frame: Buffer): bigint[] {
  const ids: bigint[] = [];
  let at = 13;
  for (let i = frame.readUInt32BE(9); i > 0; i--) {
    ids.push(frame.readBigUInt64BE(at));
    at += 8;
    const batch = (frame.readUInt8(at) & 0x80) !== 0;
    at += batch ? 11 + frame.readUInt32BE(at + 7) : 4 + frame.readUInt32BE(at);
  }
  return ids;
}

/** A response as the client decodes one; `sequence` is read by resume-point queries only. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the response it stands for
function response<T extends Response>(code: number, sequence = 0n): T {
  const decoded: Response & { sequence: bigint } = {
    code,
    ok: code === 1,
    key: 0,
    correlationId: 0,
    sequence,
  };
  return decoded as unknown as T;
}

export const PUBLISHER_ID = 7;

/** A RabbitTarget on stream 'out' over `link`, as `rabbit.target()` builds one. */
export function scriptedTarget(
  link: ScriptedLink,
  options: Partial<TargetOptions> = {},
): RabbitTarget {
  return new RabbitTarget(link, PUBLISHER_ID, 'out', { producer: 'job', ...options }, () => {});
}

/**
 * Lets every pending promise callback and I/O-free continuation run, and the writes they
 * made leave: the target writes its frames at the end of the event loop's turn
 * (src/rabbitmq/turn-writes.ts), so this waits for the turn after.
 */
export async function settle(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
}

/** How a publish ended: 'confirmed', or its error. */
export function outcome(publish: Promise<void>): Promise<unknown> {
  return publish.then(
    () => 'confirmed',
    (error: unknown) => error,
  );
}
