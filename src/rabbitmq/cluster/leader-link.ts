import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import { ReconnectingConnection, type Live, type ReconnectOptions } from '../gaps/reconnect.js';
import { BrokerUnavailableError } from '../../common/errors.js';
import type { KnownNodes } from './known-nodes.js';
import type { AddressResolver } from './node-connection.js';
import {
  membersOf,
  membersRequest,
  nodeName,
  sameNode,
  type NodeAddress,
  type StreamMembers,
} from './stream-members.js';
import type { PublisherLink } from '../write/target.js';

/** How long a declaration waits for the leader's node while its connection is down. */
const DOWN_LEADER_WAIT_MS = 1_000;

/**
 * The connections of one `connect()` to the nodes of a cluster: the URL's own (`main`,
 * which also asks the Metadata queries) and one per other node a target publishes to,
 * made when first needed and kept (each reconnects by itself) until `close()`.
 */
export class ClusterLinks {
  private readonly nodes = new Map<string, Promise<ReconnectingConnection>>();
  /** The per-node connections that opened, by node: found at once (see `abandon`). */
  private readonly opened = new Map<string, ReconnectingConnection>();
  /** Ends the per-node connection attempts under way at `close()`. */
  private readonly closing = new AbortController();
  private readonly nodeOptions: ReconnectOptions;

  constructor(
    readonly main: ReconnectingConnection,
    options: ReconnectOptions,
    readonly resolver: AddressResolver | undefined,
    /** The URLs' nodes and every node a Metadata answer named: where to ask while one is down. */
    readonly known: KnownNodes,
  ) {
    // connect()'s wait and signal are about its first connection: a node's connection fails
    // at once when the node cannot be reached (the next declaration asks again) and ends
    // with this object.
    this.nodeOptions = { ...options, waitForBrokerMs: 0, signal: this.closing.signal };
  }

  /**
   * Where `stream` lives now. Asked on the URL's node, or while that one is down on another
   * node connected to (see `anyUp`): a leader elected elsewhere is still found.
   */
  async members(stream: string, timeoutMs: number): Promise<StreamMembers> {
    const link = await this.anyUp(this.main, timeoutMs);
    const members = membersOf(
      await link.request<MetadataResponse>(membersRequest(stream), timeoutMs),
      stream,
    );
    this.known.addMembers(members);
    return members;
  }

  /**
   * `preferred` when it is connected, else the first connection that is, else one made
   * within `timeoutMs` to another known node, else `preferred` (which
   * reconnects by itself).
   */
  async anyUp(
    preferred: ReconnectingConnection,
    timeoutMs: number,
  ): Promise<ReconnectingConnection> {
    const links = [preferred, this.main, ...this.opened.values()];
    const up = links.find((link) => link.node !== undefined);
    if (up !== undefined) return up;
    const giveUp = Date.now() + timeoutMs;
    const urlNode = this.main.lastNode;
    const known = this.known.list();
    for (const node of known) {
      if (Date.now() >= giveUp) break;
      // The URL's node is `main`'s, and the others tried are down already.
      if (this.nodes.has(nodeName(node)) || (urlNode !== undefined && sameNode(urlNode, node))) {
        continue;
      }
      const link = await this.linkTo(node, known.length).catch(() => undefined);
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
      if (this.closing.signal.aborted) {
        return Promise.reject(new BrokerUnavailableError(`connection to ${name} is closed`));
      }
      link = ReconnectingConnection.open(this.main.params, this.nodeOptions, {
        node,
        addressResolver: this.resolver,
        clusterSize,
      });
      this.nodes.set(name, link);
      link.then(
        (opened) => this.opened.set(name, opened),
        // A node that cannot be reached now is tried again at the next declaration.
        () => {
          if (this.nodes.get(name) === link) this.nodes.delete(name);
        },
      );
    }
    return link;
  }

  /** The connection that holds `live` now; undefined once it was lost. */
  owner(live: Live): ReconnectingConnection | undefined {
    return [this.main, ...this.opened.values()].find((link) => link.holds(live));
  }

  /** A publisher link that follows `stream`'s leader. */
  leaderOf(stream: string): LeaderLink {
    return new LeaderLink(this, stream);
  }

  /** Closes every connection, and ends those being made. */
  async close(): Promise<void> {
    this.closing.abort();
    const settled = await Promise.allSettled(this.nodes.values());
    this.nodes.clear();
    this.opened.clear();
    const links = settled.flatMap((result) =>
      result.status === 'fulfilled' ? [result.value] : [],
    );
    await Promise.all([this.main, ...links].map((link) => link.close()));
  }
}

/**
 * The connection a target's publisher lives on: its stream's leader, looked up (Metadata
 * query) at every declaration, so a publisher declared again after a leader change — its
 * connection lost with the old leader's node, or the broker dropping it — is declared on
 * the new leader. The target hears of the losses of the connection its publisher was last
 * declared on, and of no other: while a declaration looks the leader up it holds none.
 */
export class LeaderLink implements PublisherLink {
  /** Where the last declaration went; undefined while one is looking the leader up. */
  private declaredOn: ReconnectingConnection | undefined;
  private readonly listeners = new Set<(reason: string) => void>();
  private readonly watched = new Map<ReconnectingConnection, () => void>();

  constructor(
    private readonly links: ClusterLinks,
    readonly stream: string,
  ) {}

  get params(): ReconnectingConnection['params'] {
    return this.links.main.params;
  }

  get frameMax(): number {
    return (this.declaredOn ?? this.links.main).frameMax;
  }

  /** The node publishes go to now, as it advertises itself; undefined until declared, or down. */
  get node(): NodeAddress | undefined {
    return this.declaredOn?.node;
  }

  async ready(timeoutMs: number): Promise<Live> {
    this.declaredOn = undefined;
    const members = await this.links.members(this.stream, timeoutMs);
    const link = await this.links.linkTo(members.leader, members.replicas.length + 1);
    this.declaredOn = link;
    this.watch(link);
    // A leader's node that is down is likely no longer the leader (the answer was stale):
    // failing soon lets the runner ask again after its backoff instead of waiting it out.
    return link.ready(
      link.node === undefined ? Math.min(timeoutMs, DOWN_LEADER_WAIT_MS) : timeoutMs,
    );
  }

  /**
   * On the node declared on; while that one is down, on any node up: a cluster answers the
   * resume point on every node, so a job whose leader's node went away reads it at once
   * instead of waiting for that node to come back.
   */
  async request<T extends Response>(request: Request, timeoutMs: number): Promise<T> {
    const link = await this.links.anyUp(this.declaredOn ?? this.links.main, timeoutMs);
    return link.request<T>(request, timeoutMs);
  }

  requestOn<T extends Response>(live: Live, request: Request, timeoutMs: number): Promise<T> {
    const owner = this.links.owner(live);
    if (owner === undefined) {
      return Promise.reject(
        new BrokerUnavailableError(`the connection for stream '${this.stream}' was lost`),
      );
    }
    return owner.requestOn<T>(live, request, timeoutMs);
  }

  onLoss(onLoss: (reason: string) => void): () => void {
    this.listeners.add(onLoss);
    return () => this.listeners.delete(onLoss);
  }

  abandon(live: Live, reason: string): void {
    this.links.owner(live)?.abandon(live, reason);
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
        // A connection this target holds no publisher on holds none of its publishes.
        if (link !== this.declaredOn) return;
        for (const listener of this.listeners) listener(reason);
      }),
    );
  }
}
