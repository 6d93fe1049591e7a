import { ConfigError, describe, isRetriable } from '../common/errors.js';
import { checkReference } from '../common/stream-protocol.js';
import type { SourceChunk } from '../ports/ports.js';
import { SingleActiveMemberLostError } from './errors.js';
import type { GroupMember } from './single-active-group.js';
import type { StreamLog } from './stream-log.js';
import { tail } from './tail.js';
import { Wakeups } from './wakeups.js';
import { asPromise } from '../common/as-promise.js';

/**
 * A single active consumer on an embedded stream: the RabbitMQ source's `SingleActiveOptions`
 * (`name`, `resumeFrom`), plus the deactivation the broker asks for when a super-stream group
 * rebalances.
 */
export interface SingleActiveMemberOptions {
  /** Consumer group name (the broker's "consumer reference"); the same on every instance. */
  readonly name: string;
  /**
   * Where to start when this member becomes the active one, asked at that moment (for a
   * job: the target's last publishing id + 1, or 'first' when it is 0). 'first' is the first
   * offset still stored; an offset retention removed fails the read with `RetentionGapError`.
   */
  readonly resumeFrom: () => Promise<bigint | 'first'>;
  /**
   * Called when the broker tells this member to step down, after its delivery has stopped:
   * the broker activates the next member only once this resolves (for a job: drop what is
   * queued, let the confirms under way land). Default: answers at once.
   */
  readonly onDeactivate?: () => Promise<void>;
}

/** Where the current activation reads from, and what ends its delivery. */
interface Activation {
  readonly from: bigint | 'first';
  readonly stop: AbortController;
}

/**
 * One member of a single active consumer group (see `SingleActiveGroup` for who is active).
 * Its callbacks run one at a time, in the order the broker sent the updates, and none starts
 * after `close()` or once a later update superseded it. From the moment
 * it is told to step down, nothing more is delivered to it, even if its answer to an earlier
 * activation comes later, as RabbitMQ closes a deactivated consumer's reader at once.
 */
export class SingleActiveMember implements GroupMember {
  /** The stream the group reads. */
  readonly stream: string;
  /** The consumer group's name. */
  readonly name: string;
  private activation: Activation | undefined;
  /** Counts updates, so an answer to a superseded activation starts nothing. */
  private updates = 0;
  private callbacks: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  private closed = false;
  private readonly wakeups = new Wakeups();

  constructor(
    private readonly log: StreamLog,
    private readonly options: SingleActiveMemberOptions,
    private readonly leaveGroup: (member: SingleActiveMember) => void,
  ) {
    if (typeof options.name !== 'string' || options.name === '') {
      throw new ConfigError('singleActive.name', 'must be a non-empty string', options.name);
    }
    checkReference('singleActive.name', options.name); // as RabbitMQ: a consumer reference
    if (typeof options.resumeFrom !== 'function') {
      throw new ConfigError('singleActive.resumeFrom', 'must be a function', options.resumeFrom);
    }
    this.stream = log.name;
    this.name = options.name;
  }

  /** Whether this member is delivering: activated, answered, and not told to step down since. */
  get active(): boolean {
    return this.activation !== undefined;
  }

  activate(): void {
    const update = ++this.updates;
    const current = (): boolean => update === this.updates && !this.closed;
    // Not awaited: activating answers later, in turn; `serially` never rejects (a failing
    // callback becomes this member's failure and ends its reads).
    void this.serially('resumeFrom', async () => {
      if (!current()) return; // superseded before its turn: nothing to answer for
      const from = await this.options.resumeFrom();
      if (!current()) return;
      this.activation = { from, stop: new AbortController() };
      this.wake();
    });
  }

  deactivate(): Promise<void> {
    this.updates++;
    this.stopDelivery();
    return this.serially('onDeactivate', async () => {
      if (!this.closed) await this.options.onDeactivate?.();
    });
  }

  /**
   * The chunks of the current activation, or of the next one when passive: from where
   * `resumeFrom` answered, until this member is told to step down, closed, or `signal` aborts
   * (then it simply ends). Read again for the next activation. Throws
   * `SingleActiveMemberLostError` once a callback failed (a `resumeFrom` that failed with an
   * error that is not retriable: that error).
   */
  async *read(signal: AbortSignal): AsyncGenerator<SourceChunk> {
    const activation = await this.nextActivation(signal);
    if (activation !== undefined) {
      const from = activation.from === 'first' ? this.log.firstOffset : activation.from;
      const until = AbortSignal.any([signal, activation.stop.signal]);
      for await (const { chunk } of tail(this.log, from, until)) yield chunk;
    }
    if (this.failure !== undefined) throw this.failure;
  }

  /** Leaves the group (the next member takes over at once) and ends every read. */
  close(): Promise<void> {
    return asPromise(() => {
      if (this.closed) return;
      this.closed = true;
      this.stopDelivery();
      this.wake();
      this.leaveGroup(this);
    });
  }

  private async nextActivation(signal: AbortSignal): Promise<Activation | undefined> {
    while (this.activation === undefined) {
      if (this.closed || signal.aborted) return undefined;
      await this.wakeups.next(signal);
    }
    return this.activation;
  }

  private serially(
    callback: SingleActiveMemberLostError['callback'],
    step: () => Promise<void>,
  ): Promise<void> {
    this.callbacks = this.callbacks.then(step).catch((error: unknown) => {
      if (this.closed) return;
      // Like a client whose answer fails: it loses its subscription and so leaves the group.
      // A resume point refused for good (a stream gone, a recovery state missing, a crash)
      // ends the reads with its own error, as the RabbitMQ adapter's do: wrapped as
      // retriable, the job would join again and fail the same way forever.
      // An Error always, as the RabbitMQ adapter's: a rejection with undefined is no failure.
      this.failure =
        callback === 'resumeFrom' && !isRetriable(error)
          ? error instanceof Error
            ? error
            : new Error(describe(error))
          : new SingleActiveMemberLostError(this.stream, this.name, callback, error);
      void this.close();
    });
    return this.callbacks;
  }

  private stopDelivery(): void {
    this.activation?.stop.abort();
    this.activation = undefined;
  }

  private wake(): void {
    this.wakeups.wakeAll();
  }
}
