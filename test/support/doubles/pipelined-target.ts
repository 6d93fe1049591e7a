// A network between a job and an embedded target that behaves like a RabbitMQ connection
// under load, so that pipelining (the ordered publisher, the in-flight bound, the fence) is
// exercised: the embedded target alone stores and confirms every publish synchronously.
import { PublishError, type ResultWhere, type Target } from '../../../src/index.js';
import { SimulatedCrash } from '../../../src/memory/index.js';

/**
 * - `'lose-confirm'`: the write is stored in its turn, but its confirm never comes; the
 *   publish rejects with a retriable "confirm timed out", possibly before the write is stored.
 * - `'connection-loss'`: at a random later moment the connection drops: the writes already
 *   stored stay, the ones not yet stored are gone, and every publish in flight rejects retriable.
 * - `'crash'`: the same, but the process dies: every publish in flight and every later call
 *   rejects with `SimulatedCrash`, and the test starts a new job.
 */
export type LinkFaultKind = 'lose-confirm' | 'connection-loss' | 'crash';

export interface LinkFault {
  /** 1 = the first publish sent on the link, counted across every target it opened. */
  readonly atPublish: number;
  readonly kind: LinkFaultKind;
}

/** What happened on a link, for the property's coverage figures. */
export interface LinkFigures {
  /** Most publishes one target had awaiting their confirm at once. */
  maxInFlight: number;
  /** Confirms that arrived while a write sent earlier was still unconfirmed. */
  confirmsOutOfOrder: number;
  /** Timeouts of a lost confirm, and those of them that came before the write was stored. */
  timeouts: number;
  timeoutsBeforeStore: number;
  connectionLosses: number;
  crashes: number;
  /** Timeouts, losses and crashes that found two or more publishes in flight. */
  failuresWithTwoInFlight: number;
  /** Losses and crashes that found some in-flight writes stored and others not. */
  lossesWithPartlyStoredWrites: number;
  /** Resume points asked for while a publish of the same target was still in flight. */
  queriesWithPublishesInFlight: number;
}

/**
 * The connection between successive runs of one job and the broker: one random schedule
 * and one fault plan, shared by the target of every run (a crash ends a run; the next run
 * opens a new target on the same link).
 */
export class Link {
  private sent = 0;
  readonly figures: LinkFigures = {
    maxInFlight: 0,
    confirmsOutOfOrder: 0,
    timeouts: 0,
    timeoutsBeforeStore: 0,
    connectionLosses: 0,
    crashes: 0,
    failuresWithTwoInFlight: 0,
    lossesWithPartlyStoredWrites: 0,
    queriesWithPublishesInFlight: 0,
  };

  constructor(
    readonly random: () => number,
    private readonly faults: readonly LinkFault[],
  ) {}

  /** A target of one job run, publishing to `inner` (a fresh embedded target) through this link. */
  target(inner: Target): PipelinedTarget {
    return new PipelinedTarget(inner, this);
  }

  /** Counts a publish sent; the faults planned for it. */
  nextPublish(): LinkFaultKind[] {
    this.sent++;
    return this.faults.filter((f) => f.atPublish === this.sent).map((f) => f.kind);
  }
}

interface Write {
  readonly id: bigint;
  readonly messages: readonly Uint8Array[];
  readonly confirmLost: boolean;
  stored: boolean;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A target whose writes travel one connection: the broker stores them in the order they
 * were sent, one at a time, at random moments; confirms come back at random moments after
 * the store, so in any order in time; faults as `LinkFaultKind` says. Between random events
 * the job runs freely (each event fires in its own macrotask).
 *
 * It keeps the fence every target keeps: after any failed publish it refuses every later
 * one, retriable, until `lastPublishingId()` has been asked again.
 */
export class PipelinedTarget implements Target {
  readonly stream: string;
  readonly producer: string;
  readonly maxWriteBytes: number;
  /** Sent and not yet stored, in order: the broker's side of the connection. */
  private readonly unstored: Write[] = [];
  /** Awaiting their confirm or failure, in the order sent: the client's side. */
  private readonly unsettled: Write[] = [];
  private readonly pendingLosses: { readonly crash: boolean }[] = [];
  private fenced = false;
  private dead = false;
  private ticking = false;

  constructor(
    private readonly inner: Target,
    private readonly link: Link,
  ) {
    this.stream = inner.stream;
    this.producer = inner.producer;
    this.maxWriteBytes = inner.maxWriteBytes;
  }

  /** Publishes awaiting their confirm or failure. */
  get inFlight(): number {
    return this.unsettled.length;
  }

  /** Forwarded (the runner releases its target when a run ends); a dead one has nothing left. */
  async release(): Promise<void> {
    if (!this.dead) await this.inner.release?.();
  }

  async lastPublishingId(): Promise<bigint> {
    if (this.dead) throw this.crash();
    if (this.unsettled.length > 0) this.link.figures.queriesWithPublishesInFlight++;
    this.fenced = false;
    return this.inner.lastPublishingId();
  }

  hasPublished(): Promise<boolean> {
    if (this.dead) return Promise.reject(this.crash());
    return this.inner.hasPublished();
  }

  readResult(publishingId: bigint, where?: ResultWhere): Promise<Uint8Array | undefined> {
    if (this.dead) return Promise.reject(this.crash());
    return this.inner.readResult(publishingId, where);
  }

  publish(publishingId: bigint, messages: readonly Uint8Array[]): Promise<void> {
    if (this.dead) return Promise.reject(this.crash());
    if (this.fenced) {
      return Promise.reject(
        new PublishError(this.stream, publishingId, true, 'an earlier publish failed (fenced)'),
      );
    }
    const faults = this.link.nextPublish();
    return new Promise<void>((resolve, reject) => {
      const write: Write = {
        id: publishingId,
        messages,
        confirmLost: faults.includes('lose-confirm'),
        stored: false,
        resolve,
        reject,
      };
      this.unstored.push(write);
      this.unsettled.push(write);
      const figures = this.link.figures;
      figures.maxInFlight = Math.max(figures.maxInFlight, this.unsettled.length);
      for (const kind of faults) {
        if (kind !== 'lose-confirm') this.pendingLosses.push({ crash: kind === 'crash' });
      }
      this.tick();
    });
  }

  /** Fires one random event per macrotask while any is possible. */
  private tick(): void {
    if (this.ticking) return;
    this.ticking = true;
    setImmediate(() => {
      this.ticking = false;
      const events = this.possibleEvents();
      if (events.length === 0) return;
      const event = events[Math.floor(this.link.random() * events.length)] as () => void;
      event();
      this.tick();
    });
  }

  private possibleEvents(): (() => void)[] {
    const events: (() => void)[] = [];
    const next = this.unstored[0];
    if (next !== undefined) events.push(() => this.store(next));
    for (const write of this.unsettled) {
      if (write.confirmLost) events.push(() => this.timeOut(write));
      else if (write.stored) events.push(() => this.confirm(write));
    }
    for (const loss of this.pendingLosses) events.push(() => this.lose(loss));
    return events;
  }

  private store(write: Write): void {
    this.unstored.shift();
    write.stored = true;
    // The embedded target stores (or discards a duplicate) synchronously; a refusal fails the write.
    this.inner.publish(write.id, write.messages).catch((error: unknown) => {
      this.settle(write);
      this.fenced = true;
      write.reject(error);
    });
  }

  private confirm(write: Write): void {
    if (this.unsettled[0] !== write) this.link.figures.confirmsOutOfOrder++;
    this.settle(write);
    write.resolve();
  }

  private timeOut(write: Write): void {
    const figures = this.link.figures;
    figures.timeouts++;
    if (!write.stored) figures.timeoutsBeforeStore++;
    if (this.unsettled.length >= 2) figures.failuresWithTwoInFlight++;
    this.settle(write);
    this.fenced = true;
    write.reject(new PublishError(this.stream, write.id, true, 'confirm timed out'));
  }

  private lose(loss: { readonly crash: boolean }): void {
    this.pendingLosses.splice(this.pendingLosses.indexOf(loss), 1);
    if (this.dead) return;
    const figures = this.link.figures;
    if (loss.crash) figures.crashes++;
    else figures.connectionLosses++;
    if (this.unsettled.length >= 2) figures.failuresWithTwoInFlight++;
    if (this.unsettled.some((w) => w.stored) && this.unsettled.some((w) => !w.stored)) {
      figures.lossesWithPartlyStoredWrites++;
    }
    this.unstored.length = 0;
    const inFlight = this.unsettled.splice(0);
    this.fenced = true;
    this.dead = loss.crash;
    // The process died, and its connection with it: the broker no longer holds its producer.
    if (loss.crash) void this.inner.release?.();
    for (const write of inFlight) {
      write.reject(
        loss.crash
          ? this.crash()
          : new PublishError(this.stream, write.id, true, 'connection lost'),
      );
    }
  }

  private settle(write: Write): void {
    this.unsettled.splice(this.unsettled.indexOf(write), 1);
  }

  private crash(): SimulatedCrash {
    return new SimulatedCrash(this.stream, this.producer, 'after-publish');
  }
}
