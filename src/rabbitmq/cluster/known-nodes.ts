import { nodeName, type NodeAddress, type StreamMembers } from './stream-members.js';

/**
 * The nodes of a cluster one `connect()` knows of: the nodes its URLs name, then every member
 * a Metadata answer named (a target's declaration, a source's read). Connections that cannot
 * reach their first choice try these in turn, so a job whose URL's node is down starts and
 * reconnects through the others, as the Java client's `uris` do. It never shrinks: during a
 * leader election an answer may name fewer members than there are.
 */
export class KnownNodes {
  private readonly nodes = new Map<string, NodeAddress>();

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
}
