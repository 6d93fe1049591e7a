import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import { ReconnectingConnection, type Live, type ReconnectOptions } from './gaps/reconnect.js';
import { BrokerUnavailableError } from '../common/errors.js';
import type { AddressResolver } from './node-connection.js';
import {
  membersOf,
  membersRequest,
  nodeName,
  sameNode,
  type NodeAddress,
  type StreamMembers,
} from './stream-members.js';
import type { PublisherLink } from './target.js';

/** How long a declaration waits for the leader's node while its connection is down. */
const DOWN_LEADER_WAIT_MS = 1_000;

/**
 * The connections of one `connect()` to the nodes of a cluster: the URL's own (`main`,
 * which also asks the Metadata queries) and one per other node a target publishes to,
 * made when first needed and kept (each reconnects by itself) until `close()`.
 */
export class ClusterLinks {
  private readonly nodes = new Map<string, Promise<ReconnectingConnection>>();
  private closed = false;
  /** Every node a Metadata answer named: where to ask while the URL's node is down. */
  private readonly seen = new Map<string, NodeAddress>();

  constructor(
    readonly main: ReconnectingConnection,
    private readonly options: ReconnectOptions,
    readonly resolver: AddressResolver | undefined,
  ) {}

  /**
   * Where `stream` lives now. Asked on the URL's node, or while that one is down on any
   * other node connected to: a leader elected elsewhere is still found.
   */
  async members(stream: string, timeoutMs: number): Promise<StreamMembers> {
    const link = await this.anyUp(this.main);
    const members = membersOf(
      await link.request<MetadataResponse>(membersRequest(stream), timeoutMs),
      stream,
    );
    for (const node of [members.leader, ...members.replicas]) this.seen.set(nodeName(node), node);
    return members;
  }

  /**
   * `preferred` when it is connected, else the first connection that is, else one made to a
   * node seen in a Metadata answer, else `preferred` (which reconnects by itself).
   */
  async anyUp(preferred: ReconnectingConnection): Promise<ReconnectingConnection> {
    if (preferred.node !== undefined) return preferred;
    const links = [this.main, ...(await this.connected())];
    const up = links.find((link) => link.node !== undefined);
    if (up !== undefined) return up;
    for (const [name, node] of this.seen) {
      if (this.nodes.has(name)) continue; // connected to already, and down
      const link = await this.linkTo(node, this.seen.size).catch(() => undefined);
      if (link?.node !== undefined) return link;
    }
    return preferred;
  }

  /** The connection to `node`: the URL's own when that is where it landed. */
  linkTo(node: NodeAddress, clusterSize: number): Promise<ReconnectingConnection> {
    const mainNode = this.main.node;
    if (mainNode !== undefined && sameNode(mainNode, node)) return Promise.resolve(this.main);
    const name = nodeName(node);
    let link = this.nodes.get(name);
    if (link === undefined) {
      if (this.closed) {
        return Promise.reject(new BrokerUnavailableError(`connection to ${name} is closed`));
      }
      link = ReconnectingConnection.open(this.main.params, this.options, {
        node,
        resolver: this.resolver,
        clusterSize,
      });
      this.nodes.set(name, link);
      // A node that cannot be reached now is tried again at the next declaration.
      link.catch(() => {
        if (this.nodes.get(name) === link) this.nodes.delete(name);
      });
    }
    return link;
  }

  /** A publisher link that follows `stream`'s leader. */
  leaderOf(stream: string): LeaderLink {
    return new LeaderLink(this, stream);
  }

  /** Abandons `live` on whichever connection holds it. */
  abandon(live: Live, reason: string): void {
    this.main.abandon(live, reason);
    for (const link of this.nodes.values()) {
      void link.then(
        (opened) => opened.abandon(live, reason),
        () => undefined, // never opened: holds nothing
      );
    }
  }

  /** Closes every connection, those still opening included (once they are open). */
  async close(): Promise<void> {
    this.closed = true;
    const links = await this.connected();
    this.nodes.clear();
    await Promise.all([this.main, ...links].map((link) => link.close()));
  }

  /** The per-node connections that opened. */
  private async connected(): Promise<ReconnectingConnection[]> {
    const settled = await Promise.allSettled(this.nodes.values());
    return settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  }
}

/**
 * The connection a target's publisher lives on: its stream's leader, looked up (Metadata
 * query) at every declaration, so a publisher declared again after a leader change — its
 * connection lost with the old leader's node, or the broker dropping it — is declared on
 * the new leader. Losses are those of the connection to the node last looked up.
 */
export class LeaderLink implements PublisherLink {
  private current: ReconnectingConnection;
  private readonly listeners = new Set<(reason: string) => void>();
  private readonly watched = new Map<ReconnectingConnection, () => void>();

  constructor(
    private readonly links: ClusterLinks,
    readonly stream: string,
  ) {
    this.current = links.main;
    this.watch(this.current);
  }

  get params(): ReconnectingConnection['params'] {
    return this.links.main.params;
  }

  get frameMax(): number {
    return this.current.frameMax;
  }

  /** The node publishes go to now, as it advertises itself; undefined while down. */
  get node(): NodeAddress | undefined {
    return this.current.node;
  }

  async ready(timeoutMs: number): Promise<Live> {
    const members = await this.links.members(this.stream, timeoutMs);
    const link = await this.links.linkTo(members.leader, members.replicas.length + 1);
    this.current = link;
    this.watch(link);
    // A leader's node that is down is likely no longer the leader (the answer was stale):
    // failing soon lets the runner ask again after its backoff instead of waiting it out.
    return link.ready(
      link.node === undefined ? Math.min(timeoutMs, DOWN_LEADER_WAIT_MS) : timeoutMs,
    );
  }

  /**
   * On the node last looked up (where the publisher is declared); while that one is down, on
   * any node up: a cluster answers the resume point on every node, so a job whose leader's
   * node went away reads it at once instead of waiting for that node to come back.
   */
  async request<T extends Response>(request: Request, timeoutMs: number): Promise<T> {
    return (await this.links.anyUp(this.current)).request<T>(request, timeoutMs);
  }

  onLoss(onLoss: (reason: string) => void): () => void {
    this.listeners.add(onLoss);
    return () => this.listeners.delete(onLoss);
  }

  abandon(live: Live, reason: string): void {
    this.links.abandon(live, reason);
  }

  /** Stops hearing of the connections' losses (the target closed). */
  dispose(): void {
    for (const unsubscribe of this.watched.values()) unsubscribe();
    this.watched.clear();
    this.listeners.clear();
  }

  private watch(link: ReconnectingConnection): void {
    if (this.watched.has(link)) return;
    this.watched.set(
      link,
      link.onLoss((reason) => {
        // A connection this target no longer publishes on holds none of its publishes.
        if (link !== this.current) return;
        for (const listener of this.listeners) listener(reason);
      }),
    );
  }
}
