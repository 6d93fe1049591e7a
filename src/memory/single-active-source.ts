import { ConfigError, SourceDeactivatedError } from '../common/errors.js';
import { checkReference } from '../common/stream-protocol.js';
import type { GroupObserver, ReadStart, Source, SourceChunk } from '../ports/ports.js';
import { resolveReadStart } from '../ports/read-start.js';
import type { SingleActiveMember, SingleActiveMemberOptions } from './single-active-member.js';
import type { StreamLog } from './stream-log.js';
import { Wakeups } from './wakeups.js';
import { MemorySource } from './source.js';

/** A job's source as one member of a single active consumer group (`broker.source(stream, { singleActive })`). */
export interface SingleActiveSourceOptions {
  /** Consumer group name: the same on every instance of the job (and every partition). */
  readonly name: string;
}

/** One `read()` in progress: where it starts and what ends it. */
interface Read {
  readonly from: ReadStart;
  readonly signal: AbortSignal;
  /** Ends the member's read when a step-down comes before any delivery. */
  readonly stop: AbortController;
  /** Set once the member's activation asked `from`: a step-down now fails this read. */
  activated: boolean;
}

/**
 * The `Source` port over a `SingleActiveMember`: the member joins the group on the first
 * read and stays in it across reads, as a RabbitMQ consumer stays subscribed while passive
 * (leaving and joining again would move it to the end of the group and, on a partition,
 * could make the rule pick it again at once: a ping-pong). Each read waits to be activated,
 * asks `from` then, and delivers until told to step down; it then fails with
 * `SourceDeactivatedError` and answers the broker only once its `signal` aborts (the runner
 * aborts it after its confirms landed). A read that ends any other way (aborted while
 * active or waiting, a member failure) leaves the group; so does `close()`.
 */
export class SingleActiveSource extends MemorySource implements Source {
  readonly group: string;
  private member: SingleActiveMember | undefined;
  private current: Read | undefined;
  /** The read whose activation asked `from`, until the step-down is answered. */
  private activated: Read | undefined;
  /** Activations waiting for the next read (see `resumeFrom`). */
  private readonly reads = new Wakeups();

  constructor(
    log: StreamLog,
    options: SingleActiveSourceOptions,
    private readonly join: (options: SingleActiveMemberOptions) => SingleActiveMember,
  ) {
    super(log);
    if (typeof options.name !== 'string' || options.name === '') {
      throw new ConfigError('singleActive.name', 'must be a non-empty string', options.name);
    }
    checkReference('singleActive.name', options.name); // as RabbitMQ: a consumer reference
    this.group = options.name;
  }

  /** The group member while this source is in its group (for inspection in tests). */
  get groupMember(): SingleActiveMember | undefined {
    return this.member;
  }

  override async *read(
    from: ReadStart,
    signal: AbortSignal,
    group?: GroupObserver,
  ): AsyncIterable<SourceChunk> {
    if (this.current !== undefined) {
      throw new ConfigError('read', 'must not be called while a read of this source runs', from);
    }
    const read: Read = { from, signal, stop: new AbortController(), activated: false };
    this.current = read;
    this.reads.wakeAll();
    const member = (this.member ??= this.joinGroup());
    // Joined (or still in the group after a step-down): an activation is answered only later,
    // by `resumeFrom`, as RabbitMQ answers a subscribe before it activates anyone.
    group?.standby(this.group);
    let deactivated = false;
    try {
      let next: bigint | undefined;
      for await (const chunk of member.read(AbortSignal.any([signal, read.stop.signal]))) {
        next = chunk.firstOffset + BigInt(chunk.count);
        yield chunk;
      }
      // The member's read ends on our abort, on its close, or when it is told to step down.
      deactivated = !signal.aborted && member === this.member && read.activated;
      if (deactivated) throw new SourceDeactivatedError(this.stream, this.group, next);
    } finally {
      this.current = undefined;
      if (!deactivated) await this.leave(member);
    }
  }

  /** Leaves the group, if in it; a later read joins again (at the end of the group). */
  async close(): Promise<void> {
    if (this.member !== undefined) await this.leave(this.member);
  }

  private joinGroup(): SingleActiveMember {
    const member: SingleActiveMember = this.join({
      name: this.group,
      resumeFrom: () => this.resumeFrom(member),
      onDeactivate: () => this.answerStepDown(),
    });
    return member;
  }

  private async leave(member: SingleActiveMember): Promise<void> {
    if (this.member === member) this.member = undefined;
    this.activated = undefined;
    this.reads.wakeAll();
    await member.close();
  }

  /** The member's answer to an activation: the `from` of the read in progress, asked now. */
  private async resumeFrom(member: SingleActiveMember): Promise<bigint | 'first'> {
    // Activated between two reads (the runner re-enters after a step-down): wait for the next.
    while (this.current === undefined || this.current.signal.aborted) {
      if (this.member !== member) return 'first'; // left: the member ignores this answer
      await this.reads.next();
    }
    if (this.member !== member) return 'first';
    const read = this.current;
    read.activated = true;
    this.activated = read;
    return resolveReadStart(read.from);
  }

  /**
   * The member's answer to a step-down. Delivery has stopped already; the read that was
   * activated fails (woken if it was still waiting for its first chunk) and the answer waits
   * until that read's signal aborts: the runner's confirms have landed by then.
   */
  private async answerStepDown(): Promise<void> {
    const read = this.activated;
    this.activated = undefined;
    if (read === undefined || read.signal.aborted) return;
    read.stop.abort();
    await new Promise<void>((resolve) =>
      read.signal.addEventListener('abort', () => resolve(), { once: true }),
    );
  }
}
