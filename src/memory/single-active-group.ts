/** What a group asks of its members: RabbitMQ's ConsumerUpdate, both ways. */
export interface GroupMember {
  /** ConsumerUpdate(active=true): the member answers with where to start, then reads. */
  activate(): void;
  /**
   * ConsumerUpdate(active=false) to a member stepping down; resolves once it has answered.
   * Never rejects: a member whose answer fails leaves the group instead.
   */
  deactivate(): Promise<void>;
}

/**
 * A single active consumer group on one stream, with the rules of RabbitMQ 4.0's
 * rabbit_stream_sac_coordinator.erl:
 *
 * - Members are kept in join order (add_to_group appends).
 * - On a plain stream (partition index -1) the first member is active; a newcomer never
 *   takes over; when the active one leaves, the first remaining member is activated at
 *   once (do_register_consumer and handle_consumer_removal for -1, compute_active_consumer).
 * - On a super-stream partition the active member is `members[partitionIndex rem size]`
 *   (evaluate_active_consumer). The first member of an empty group is activated at once.
 *   When a join or a leave makes the rule pick another member, the current active one is
 *   told to step down and NOBODY is active until it answers; its answer
 *   (command_activate_consumer) activates whoever the rule picks at that moment, possibly
 *   itself. While an answer is awaited, joins and leaves only change the membership.
 * - When the active member itself leaves, the rule's pick is activated at once: there is
 *   nobody to wait for.
 * - A stepping-down member that leaves before answering counts as having answered
 *   (rabbit_stream_reader does so on unsubscribe; from 4.3 also when its connection dies,
 *   where 4.0 could leave the group without an active member).
 */
export class SingleActiveGroup<Member extends GroupMember> {
  private readonly joined: Member[] = [];
  private current: Member | undefined;
  private steppingDown: Member | undefined;

  constructor(
    readonly stream: string,
    readonly name: string,
    /** The stream's index among its super stream's partitions; -1 for a plain stream. */
    readonly partitionIndex: number,
  ) {}

  /** Members in join order. */
  get members(): readonly Member[] {
    return this.joined;
  }

  /** The member the group made active, if any (undefined while a step-down is answered). */
  get active(): Member | undefined {
    return this.current;
  }

  /** The member told to step down whose answer is awaited, if any. */
  get deactivating(): Member | undefined {
    return this.steppingDown;
  }

  join(member: Member): void {
    this.joined.push(member);
    if (this.partitionIndex < 0) {
      if (this.current === undefined) this.activate(member);
    } else if (this.joined.length === 1) {
      this.activate(member);
    } else {
      this.rebalance();
    }
  }

  leave(member: Member): void {
    const index = this.joined.indexOf(member);
    if (index < 0) return;
    this.joined.splice(index, 1);
    if (member === this.steppingDown) {
      this.answered(member);
    } else if (member === this.current) {
      this.current = undefined;
      if (this.steppingDown === undefined) this.activatePick();
    } else if (this.partitionIndex >= 0) {
      this.rebalance();
    }
  }

  private rebalance(): void {
    const active = this.current;
    // No active member: a step-down is being answered, and its answer picks.
    if (active === undefined || this.pick() === active) return;
    this.current = undefined;
    this.steppingDown = active;
    void active.deactivate().then(() => this.answered(active));
  }

  private answered(member: Member): void {
    if (this.steppingDown !== member) return;
    this.steppingDown = undefined;
    this.activatePick();
  }

  private activatePick(): void {
    const next = this.pick();
    if (next !== undefined) this.activate(next);
  }

  private activate(member: Member): void {
    this.current = member;
    member.activate();
  }

  private pick(): Member | undefined {
    if (this.joined.length === 0) return undefined;
    return this.joined[this.partitionIndex < 0 ? 0 : this.partitionIndex % this.joined.length];
  }
}
