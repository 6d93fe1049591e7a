import { nodeName, type NodeAddress, type StreamMembers } from './stream-members.js';

/**
 * How long a node that did not finish a handshake in time (it failed, timed out, or another
 * node answered first) is tried after the others: a frozen node is usually frozen for longer
 * than one connection, and each new connection would pay the stagger for it again.
 */
export const PASSED_OVER_MS = 60_000;

/**
 * The nodes of a cluster one `connect()` knows of: the nodes its URLs name, then every member
 * a Metadata answer named (a target's declaration, a source's read). Connections that cannot
 * reach their first choice try these in turn, so a job whose URL's node is down starts and
 * reconnects through the others, as the Java client's `uris` do. It never shrinks: during a
 * leader election an answer may name fewer members than there are. It also remembers which
 * nodes were passed over lately, so that the next connections try the answering ones first.
 */
export class KnownNodes {
  private readonly nodes = new Map<string, NodeAddress>();
  /** When each node passed over may go first again, by name. */
  private readonly passedOverUntil = new Map<string, number>();

  constructor(seeds: readonly NodeAddress[] = []) {
    this.add(seeds);
  }

  add(nodes: Iterable<NodeAddress>): void {
    for (const { host, port } of nodes) {
      const name = nodeName({ host, port });
      if (!this.nodes.has(name)) this.nodes.set(name, { host, port });
    }
  }

  /** Learns where a Metadata answer says a stream's members are. */
  addMembers(members: StreamMembers): void {
    this.add([members.leader, ...members.replicas]);
  }

  /** In the order they became known (URLs first). */
  list(): NodeAddress[] {
    return [...this.nodes.values()];
  }

  /** Learns how a race of connections went: `winner` answered, `passedOver` did not in time. */
  raced(winner: NodeAddress, passedOver: readonly NodeAddress[]): void {
    this.passedOverUntil.delete(nodeName(winner));
    const until = Date.now() + PASSED_OVER_MS;
    for (const node of passedOver) this.passedOverUntil.set(nodeName(node), until);
  }

  /** `nodes` in the same order, but those passed over in the last PASSED_OVER_MS last. */
  inTurn<N extends NodeAddress>(nodes: readonly N[]): N[] {
    const now = Date.now();
    const late = (node: NodeAddress): number =>
      Number((this.passedOverUntil.get(nodeName(node)) ?? 0) > now);
    return [...nodes].sort((a, b) => late(a) - late(b));
  }
}
