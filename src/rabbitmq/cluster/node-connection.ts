import type { ClientParams } from 'rabbitmq-stream-js-client';
import type {
  Connection,
  ConnectionListenersParams,
} from 'rabbitmq-stream-js-client/dist/connection.js';
import { BrokerUnavailableError, ConfigError, describe } from '../../common/errors.js';
import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';
import { abandon } from '../gaps/client-socket.js';
import { openConnection } from '../gaps/handshake.js';
import type { KnownNodes } from './known-nodes.js';
import { openStaggered } from './staggered-open.js';
import {
  membersOf,
  membersRequest,
  nodeName,
  sameNode,
  type NodeAddress,
  type StreamMembers,
} from './stream-members.js';

/**
 * Where to connect to reach `node` (a node as the broker advertises it). Without one, the
 * advertised address itself. With a load balancer in front of the cluster, return the
 * balancer's address: each connection is then checked to have landed on the node asked for
 * (its Open response names the node) and made again until it has, as the Java client's
 * address resolver does.
 */
export type AddressResolver = (node: NodeAddress) => NodeAddress;

/** `value` as an `addressResolver` option: a function, or undefined. */
export function checkAddressResolver(value: unknown): AddressResolver | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigError('addressResolver', 'must be a function', value);
  }
  return value as AddressResolver | undefined;
}

/** The member of a stream a connection is for: its leader (writes) or a replica (reads). */
export type MemberRole = 'leader' | 'replica';

/** How a connection reaches a member of a stream: the address resolver, and the nodes known. */
export interface MemberReach {
  readonly addressResolver?: AddressResolver | undefined;
  /**
   * Nodes to try in turn when the URL's node cannot be reached (./known-nodes.ts); every
   * Metadata answer asked on the way is added to them.
   */
  readonly knownNodes?: KnownNodes | undefined;
}

export interface NodeConnectionOptions extends MemberReach {
  /** Nodes of the cluster, as far as known: a resolver gets (2 + size)² tries to land; default 1. */
  readonly clusterSize?: number;
  /** Bound on each connection attempt. */
  readonly timeoutMs: number;
  /** Hear only about the connection returned (not about tries closed on the way). */
  readonly listeners?: ConnectionListenersParams;
  readonly signal?: AbortSignal | undefined;
  /**
   * A node a reader found frozen (see ../read/silence-watch.ts): it still accepts connections and
   * is still named by the others, but answers nothing, so it is tried last.
   */
  readonly avoid?: NodeAddress | undefined;
  /**
   * Where the stream's members were last seen: a member is then connected to directly, with
   * no Metadata query, which the other nodes leave unanswered while one node is frozen
   * (measured on RabbitMQ 4.0.5: no answer for the whole of a 36 s SIGSTOP, where Subscribe
   * and Publish on the live members went on).
   */
  readonly members?: StreamMembers | undefined;
}

/** The node a connection landed on, as its Open response advertises it. */
export function advertisedNode(connection: Connection): NodeAddress {
  const { host, port } = connection.getConnectionInfo();
  return { host, port };
}

/** A connection to `node` (through the resolver when there is one; see `AddressResolver`). */
export async function openNodeConnection(
  params: ClientParams,
  node: NodeAddress,
  options: NodeConnectionOptions,
): Promise<Connection> {
  return (await openNodeQuiet(params, node, options)).keep();
}

/** As `openNodeConnection`, heard of only once kept (see `openQuiet`). */
async function openNodeQuiet(
  params: ClientParams,
  node: NodeAddress,
  options: NodeConnectionOptions,
): Promise<QuietConnection> {
  const resolver = options.addressResolver;
  if (resolver === undefined) return openQuiet(params, node, options);
  const attempts = (2 + (options.clusterSize ?? 1)) ** 2;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const opened = await openQuiet(params, resolver(node), options);
    if (sameNode(advertisedNode(opened.connection), node)) return opened;
    abandon(opened.connection);
  }
  throw new BrokerUnavailableError(
    `no connection to RabbitMQ node ${nodeName(node)}: ${attempts} connections through the ` +
      `address resolver (to ${nodeName(resolver(node))}) all landed on other nodes`,
  );
}

/**
 * A connection to a member of `stream` in `role` (a 'replica' when the stream has one, else
 * its leader). The Metadata query goes to the node of `params` (the URL's), whose connection
 * is kept when that node is a right one; otherwise a random right one is connected to.
 */
export async function openMemberConnection(
  params: ClientParams,
  stream: string,
  role: MemberRole,
  options: NodeConnectionOptions,
): Promise<{ connection: Connection; members: StreamMembers }> {
  if (options.members !== undefined) {
    return {
      connection: await openCandidate(params, options.members, role, options),
      members: options.members,
    };
  }
  const locator = await openLocator(params, options);
  let members: StreamMembers;
  let timer: NodeJS.Timeout | undefined;
  try {
    // The client waits for an answer forever; a node that gives none is passed over.
    const silent = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(
          new BrokerUnavailableError(
            `RabbitMQ at ${nodeName(advertisedNode(locator.connection))} did not answer the ` +
              `Metadata query ` +
              `of stream '${stream}' within ${options.timeoutMs} ms`,
          ),
        );
      }, options.timeoutMs);
    });
    const asked = locator.connection
      .sendAndWait<MetadataResponse>(membersRequest(stream))
      .catch((error: unknown) => {
        // The write failed: the connection is as good as lost.
        throw new BrokerUnavailableError(
          `the Metadata query of stream '${stream}' failed: ${describe(error)}`,
          { cause: error },
        );
      });
    const response = await Promise.race([asked, silent]);
    members = membersOf(response, stream);
  } catch (error) {
    abandon(locator.connection);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  options.knownNodes?.addMembers(members);
  const here = advertisedNode(locator.connection);
  if (memberCandidates(members, role, options.avoid).some((node) => sameNode(node, here))) {
    return { connection: locator.keep(), members };
  }
  abandon(locator.connection);
  return { connection: await openCandidate(params, members, role, options), members };
}

/**
 * A connection to one of the `memberCandidates`, the first tried picked at random to spread
 * readers, the others beside it when it does not answer in time (./staggered-open.ts).
 */
async function openCandidate(
  params: ClientParams,
  members: StreamMembers,
  role: MemberRole,
  options: NodeConnectionOptions,
): Promise<Connection> {
  const candidates = memberCandidates(members, role, options.avoid);
  const first = Math.floor(Math.random() * candidates.length);
  const order = [...candidates.slice(first), ...candidates.slice(0, first)];
  const nodeOptions = { ...options, clusterSize: members.replicas.length + 1 };
  const opened = await openFirstOf(order, options, (node, timeoutMs, signal) =>
    openNodeQuiet(params, node, { ...nodeOptions, timeoutMs, signal }),
  );
  return opened.keep();
}

/**
 * The members a connection for `role` may go to: for a 'replica', the stream's replicas (its
 * leader when it has none) other than `avoid`, else any other member; `avoid` only when it
 * is the only one.
 */
export function memberCandidates(
  members: StreamMembers,
  role: MemberRole,
  avoid?: NodeAddress,
): readonly NodeAddress[] {
  const preferred =
    role === 'replica' && members.replicas.length > 0 ? members.replicas : [members.leader];
  if (avoid === undefined) return preferred;
  const elsewhere = (nodes: readonly NodeAddress[]): NodeAddress[] =>
    nodes.filter((node) => !sameNode(node, avoid));
  const others = elsewhere(preferred);
  if (others.length > 0) return others;
  // Any member serves reads; only the leader takes writes.
  const anyOther = role === 'replica' ? elsewhere([members.leader, ...members.replicas]) : [];
  return anyOther.length > 0 ? anyOther : preferred;
}

/**
 * A connection to the URL's node, or while it is down to the first known node that answers:
 * for questions every node answers alike (the Metadata query).
 */
export async function openAnyNode(
  params: ClientParams,
  options: NodeConnectionOptions,
): Promise<Connection> {
  return (await openLocator(params, options)).keep();
}

/**
 * A connection to the URL's node, or to the first of the other known nodes that answers
 * before it (./staggered-open.ts); the nodes passed over lately, then the node to avoid,
 * go last. A refusal (user, password, vhost) is final.
 */
async function openLocator(
  params: ClientParams,
  options: NodeConnectionOptions,
): Promise<QuietConnection> {
  const url = { host: params.hostname, port: params.port };
  const others = (options.knownNodes?.list() ?? []).filter((node) => !sameNode(node, url));
  const avoided = (node: NodeAddress): boolean =>
    options.avoid !== undefined && sameNode(node, options.avoid);
  const order = [url, ...others];
  order.sort((a, b) => Number(avoided(a)) - Number(avoided(b)));
  return openFirstOf(order, options, (node, timeoutMs, signal) => {
    const address = node === url ? url : (options.addressResolver?.(node) ?? node);
    return openQuiet(params, address, { ...options, timeoutMs, signal });
  });
}

/**
 * Opens a connection to the first of `nodes` to answer, staggered (./staggered-open.ts) in the
 * order given but for the nodes `options.knownNodes` saw passed over lately, which go last;
 * tells it how the race went. Drops the others than the winner. Fails with the first
 * node's error (naming the others when there are any) when none answers, or with a refusal
 * at once.
 */
async function openFirstOf(
  nodes: readonly NodeAddress[],
  options: NodeConnectionOptions,
  open: (node: NodeAddress, timeoutMs: number, signal: AbortSignal) => Promise<QuietConnection>,
): Promise<QuietConnection> {
  const known = options.knownNodes;
  const order = known?.inTurn(nodes) ?? [...nodes];
  const { winner, opened, passedOver } = await openStaggered(
    order,
    open,
    ({ connection }) => abandon(connection),
    {
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      final: (error) => !(error instanceof BrokerUnavailableError),
      allFailed: (errors) => {
        const firstError = errors[order.indexOf(nodes[0] as NodeAddress)] ?? errors[0];
        if (nodes.length === 1) return firstError;
        const others = nodes.slice(1).map(nodeName).join(', ');
        return new BrokerUnavailableError(
          `${describe(firstError)}; nor at the other known nodes ${others}`,
          { cause: firstError },
        );
      },
    },
  );
  known?.raced(winner, passedOver);
  return opened;
}

/** A connection whose events are heard only once `keep()` is called. */
interface QuietConnection {
  readonly connection: Connection;
  readonly keep: () => Connection;
}

/**
 * Opens a connection to `address` whose events reach `options.listeners` only once `keep()`
 * is called: a try closed on the way must not look like the loss of the one kept.
 */
async function openQuiet(
  params: ClientParams,
  address: NodeAddress,
  options: NodeConnectionOptions,
): Promise<QuietConnection> {
  let kept = false;
  const listeners = Object.fromEntries(
    Object.entries(options.listeners ?? {}).map(([event, listener]) => [
      event,
      (...args: unknown[]) => {
        if (kept) (listener as (...heard: unknown[]) => void)(...args);
      },
    ]),
  ) as ConnectionListenersParams;
  const connection = await openConnection(
    { ...params, hostname: address.host, port: address.port },
    options.timeoutMs,
    listeners,
    options.signal,
  );
  return {
    connection,
    keep: () => {
      kept = true;
      return connection;
    },
  };
}
