import type { ClientParams } from 'rabbitmq-stream-js-client';
import {
  CreateStreamRequest,
  type CreateStreamArguments,
} from 'rabbitmq-stream-js-client/dist/requests/create_stream_request.js';
import { CreateSuperStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/create_super_stream_request.js';
import { DeleteStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_stream_request.js';
import { DeleteSuperStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_super_stream_request.js';
import { PartitionsQuery } from 'rabbitmq-stream-js-client/dist/requests/partitions_query.js';
import { RouteQuery } from 'rabbitmq-stream-js-client/dist/requests/route_query.js';
import type { PartitionsResponse } from 'rabbitmq-stream-js-client/dist/responses/partitions_response.js';
import type { Request } from 'rabbitmq-stream-js-client/dist/requests/request.js';
import type { Response } from 'rabbitmq-stream-js-client/dist/responses/response.js';
import type { RouteResponse } from 'rabbitmq-stream-js-client/dist/responses/route_response.js';
import type { PartitionedSource } from '../ports/ports.js';
import { ConfigError } from '../common/errors.js';
import { partitionFor } from '../common/partition-routing.js';
import {
  bindingKeysOf,
  partitionNames,
  type SuperStreamLayout,
} from '../common/super-stream-layout.js';
import { timerMs } from '../common/timer-duration.js';
import { parseStreamUrl, parseStreamUrls } from './connection-url.js';
import { ReconnectingConnection, type ReconnectOptions } from './gaps/reconnect.js';
import { ClusterLinks } from './cluster/leader-link.js';
import { KnownNodes } from './cluster/known-nodes.js';
import {
  checkAddressResolver,
  type AddressResolver,
  type MemberReach,
} from './cluster/node-connection.js';
import type { NodeAddress, StreamMembers } from './cluster/stream-members.js';
import {
  STREAM_ALREADY_EXISTS,
  STREAM_DOES_NOT_EXIST,
  checkProtocolString,
  checkStreamName,
} from '../common/stream-protocol.js';
import {
  checkStallTimeoutMs,
  rabbitSource,
  type RabbitSource,
  type RabbitSourceOptions,
} from './read/source.js';
import { StreamCommandError } from './stream-command-error.js';
import { superStreamSource } from './read/super-stream-source.js';
import { RabbitTarget, type TargetOptions } from './write/target.js';
import {
  StreamProducer,
  checkProducerOptions,
  type ProducerOptions,
} from '../producer/stream-producer.js';

/** The options of a `RabbitMQ` connection: timeouts, reconnection and how cluster nodes are reached. */
export interface ConnectOptions extends ReconnectOptions {
  /** Bound on stream management requests (create, delete), default 10 s. */
  readonly requestTimeoutMs?: number;
  /**
   * Where to connect to reach a cluster node, given as the node advertises itself (see
   * `AddressResolver`). Default: the advertised address. With a load balancer in front of
   * the cluster, return the balancer's address for every node.
   */
  readonly addressResolver?: AddressResolver;
  /**
   * `stallTimeoutMs` of the sources made here (see `RabbitSourceOptions`): a read whose node
   * sends nothing for this long reads on from another member. Default 10 s.
   */
  readonly stallTimeoutMs?: number;
}

/** Retention settings of a new stream (RabbitMQ's `x-` stream arguments). */
export interface StreamOptions {
  /**
   * Members of the stream on a cluster: its leader and replicas (RabbitMQ's
   * `x-initial-cluster-size`), an integer >= 1. Default: RabbitMQ's, every node of the
   * cluster. Super streams give it to each partition.
   */
  readonly initialClusterSize?: number;
  /** Drop segments older than this, e.g. '7D', '12h' (RabbitMQ's max-age syntax). */
  readonly maxAge?: string;
  /** Drop the oldest segments beyond this total size. */
  readonly maxLengthBytes?: number;
  /** One segment file's size, bytes (default 500 MB); retention drops whole segments. */
  readonly maxSegmentSizeBytes?: number;
}

/** Publisher ids are one byte in the protocol: a connection holds at most 256 publishers. */
const MAX_PUBLISHERS = 256;

/**
 * A RabbitMQ broker or cluster reached over the stream protocol. Targets made here publish
 * on their stream's leader: on the URL's node when it leads, else on a connection to the
 * leader's node, shared by the targets whose streams it leads (./cluster/leader-link.ts); every
 * connection reconnects by itself. Each source opens its own connections to a replica
 * (./read/source.ts), so a slow reader never holds up confirms.
 */
export class RabbitMQ {
  private readonly usedPublisherIds = new Set<number>();
  private readonly targets = new Set<RabbitTarget>();
  private readonly requestTimeoutMs: number;

  private constructor(
    /** The client settings it connects with: the first node's, as parsed from the URL or given. */
    readonly params: ClientParams,
    private readonly links: ClusterLinks,
    requestTimeoutMs: number,
    private readonly stallTimeoutMs: number | undefined,
  ) {
    this.requestTimeoutMs = requestTimeoutMs;
  }

  /**
   * Connects: use `connect()`, which takes URLs. Settings are checked before anything
   * connects. `nodes` are the URLs' nodes, tried in turn after the one of `params`.
   *
   * @internal
   */
  static async open(
    params: ClientParams,
    options: ConnectOptions,
    nodes: readonly NodeAddress[] = [],
  ): Promise<RabbitMQ> {
    const requestTimeoutMs = timerMs('requestTimeoutMs', options.requestTimeoutMs ?? 10_000);
    const resolver = checkAddressResolver(options.addressResolver);
    if (options.stallTimeoutMs !== undefined) checkStallTimeoutMs(options.stallTimeoutMs);
    const known = new KnownNodes(nodes);
    const main = await ReconnectingConnection.open(params, options, undefined, {
      addressResolver: resolver,
      knownNodes: known,
    });
    return new RabbitMQ(
      params,
      new ClusterLinks(main, options, resolver, known),
      requestTimeoutMs,
      options.stallTimeoutMs,
    );
  }

  /** Where `stream`'s leader and replicas are (the Metadata query). */
  async members(stream: string): Promise<StreamMembers> {
    this.checkStream('stream', stream);
    return this.links.members(stream, this.requestTimeoutMs);
  }

  /** The `Target` port for `stream`, publishing as the named producer `options.producer`. */
  target(stream: string, options: TargetOptions): RabbitTarget {
    if (typeof options.producer !== 'string' || options.producer.length === 0) {
      throw new ConfigError('producer', 'must be a non-empty string', options.producer);
    }
    return this.publisher(stream, options);
  }

  /**
   * A producer writing to `stream` (see `StreamProducer`): each message under its own
   * publishing id, confirmed, at most `maxInFlight` unconfirmed; deduplicated when named.
   * One publisher on the stream's leader, like a target; `close()` it when done.
   */
  producer(stream: string, options: ProducerOptions = {}): StreamProducer {
    checkProducerOptions(options);
    const target = this.publisher(stream, {
      producer: options.name ?? '',
      // It writes a job's input, whose offsets a hint's tracking chunk would move.
      resultHintMs: 0,
      ...(options.maxInFlight === undefined ? {} : { maxInFlight: options.maxInFlight }),
      ...(options.confirmTimeoutMs === undefined
        ? {}
        : { confirmTimeoutMs: options.confirmTimeoutMs }),
    });
    return new StreamProducer(target, options);
  }

  /** A publisher on `stream`'s leader under a free publisher id; '' is unnamed. */
  private publisher(stream: string, options: TargetOptions): RabbitTarget {
    this.checkStream('stream', stream);
    const publisherId = this.freePublisherId();
    const link = this.links.leaderOf(stream);
    const target = new RabbitTarget(
      link,
      publisherId,
      stream,
      options,
      () => {
        link.dispose();
        this.usedPublisherIds.delete(publisherId);
        this.targets.delete(target);
      },
      this.reach(),
    );
    this.usedPublisherIds.add(publisherId);
    this.targets.add(target);
    return target;
  }

  /**
   * The `Source` port for `stream`, on this broker (see ./read/source.ts for the options); it logs
   * to `connect()`'s logger unless given one.
   */
  source(stream: string, options: Omit<RabbitSourceOptions, 'connection'> = {}): RabbitSource {
    return rabbitSource(stream, { ...this.sourceDefaults(), ...options, connection: this.params });
  }

  /**
   * The partitions of super stream `name` as `Source` ports, each read by its own loop (see
   * `PartitionedSource`). With `singleActive`, each partition is its own consumer group,
   * named by `singleActive.name`, under RabbitMQ's partition rule (the subscription names the
   * super stream): the member at `partition index rem group size`, in joining order, is active.
   */
  superStreamSource(
    name: string,
    options: Omit<RabbitSourceOptions, 'connection'> = {},
  ): PartitionedSource {
    return superStreamSource(name, () => this.partitions(name), {
      ...this.sourceDefaults(),
      ...options,
      connection: this.params,
    });
  }

  /**
   * Creates a stream; resolves as well when it exists already (with whatever settings it has).
   * A name RabbitMQ would create but never serve (over 233 UTF-8 bytes on vhost '/'), or
   * refuse (empty, `amq.`…) or change (CR, LF) is a `ConfigError`, here as wherever a stream
   * is named.
   */
  async createStream(stream: string, options: StreamOptions = {}): Promise<void> {
    this.checkStream('stream', stream);
    const response = await this.request<Response>(
      new CreateStreamRequest({ stream, arguments: streamArguments(options) }),
      this.requestTimeoutMs,
    );
    if (!response.ok && response.code !== STREAM_ALREADY_EXISTS) {
      throw new StreamCommandError('create', stream, response.code);
    }
  }

  /**
   * Creates super stream `name` (its exchange, and a partition stream per binding key with
   * `options`' retention) as `rabbitmq-streams add_super_stream` and the JS client do:
   * `{ partitions: n }` makes `<name>-0` … `<name>-(n-1)` bound with the keys '0' … 'n-1';
   * `{ bindingKeys }` makes `<name>-<key>` per key. Default: `{ partitions: 3 }`. Resolves
   * with the partitions in order, also when the super stream exists already (they are then
   * what the broker has, whatever the layout asked). A partition name that is already a
   * stream is refused with a `StreamCommandError` (code 0x05, stream already exists).
   */
  async createSuperStream(
    name: string,
    layout: SuperStreamLayout = { partitions: 3 },
    options: StreamOptions = {},
  ): Promise<string[]> {
    const partitions = partitionNames(name, layout, this.params.vhost);
    const response = await this.request<Response>(
      new CreateSuperStreamRequest({
        streamName: name,
        partitions,
        bindingKeys: bindingKeysOf(layout),
        arguments: streamArguments(options),
      }),
      this.requestTimeoutMs,
    );
    if (response.ok) return partitions;
    const refused = new StreamCommandError('create super stream', name, response.code);
    if (response.code !== STREAM_ALREADY_EXISTS) throw refused;
    // The same code when one of the partition names is already a stream (RabbitMQ's
    // check_already_existing_queue): only an existing super stream has partitions to list.
    return this.partitions(name).catch(() => Promise.reject(refused));
  }

  /** Deletes a super stream and its partition streams; resolves as well when there is none. */
  async deleteSuperStream(name: string): Promise<void> {
    this.checkStream('superStream', name);
    const response = await this.request<Response>(
      new DeleteSuperStreamRequest(name),
      this.requestTimeoutMs,
    );
    if (!response.ok && response.code !== STREAM_DOES_NOT_EXIST) {
      throw new StreamCommandError('delete super stream', name, response.code);
    }
  }

  /**
   * The partition streams of `superStream` in partition order (the Partitions query): the
   * order routing and the single-active partition rule index. Rejects with a
   * `StreamCommandError` (code 0x02) when there is no such super stream.
   */
  async partitions(superStream: string): Promise<string[]> {
    this.checkStream('superStream', superStream);
    const response = await this.request<PartitionsResponse>(
      new PartitionsQuery({ superStream }),
      this.requestTimeoutMs,
    );
    if (!response.ok) throw new StreamCommandError('partitions', superStream, response.code);
    return response.streams;
  }

  /**
   * The partition `routingKey` goes to, as the Java and JS clients' hash routing picks it
   * (MurmurHash3, see src/common/partition-routing.ts) over the Partitions query's order,
   * and as the embedded broker's `route` does.
   */
  async route(superStream: string, routingKey: string): Promise<string> {
    return partitionFor(routingKey, await this.partitions(superStream));
  }

  /**
   * The partitions bound with exactly `bindingKey` (the broker's Route query: the super
   * stream's direct exchange, as the clients' "key" routing strategy uses it); empty when no
   * binding matches. Not the hash of `route`: with `{ partitions: n }` the key '1' is bound
   * to `<name>-1` whatever its hash.
   */
  async bindingRoute(superStream: string, bindingKey: string): Promise<string[]> {
    this.checkStream('superStream', superStream);
    checkProtocolString('bindingKey', bindingKey);
    const response = await this.request<RouteResponse>(
      new RouteQuery({ superStream, routingKey: bindingKey }),
      this.requestTimeoutMs,
    );
    if (!response.ok) throw new StreamCommandError('route', superStream, response.code);
    return response.streams;
  }

  /** Deletes a stream and everything in it; resolves as well when there is no such stream. */
  async deleteStream(stream: string): Promise<void> {
    this.checkStream('stream', stream);
    const response = await this.request<Response>(
      new DeleteStreamRequest(stream),
      this.requestTimeoutMs,
    );
    if (!response.ok && response.code !== STREAM_DOES_NOT_EXIST) {
      throw new StreamCommandError('delete', stream, response.code);
    }
  }

  /** Drops the URL node's connection as a network failure would; it reconnects. For tests. */
  dropConnectionForTesting(): void {
    this.links.main.drop();
  }

  /** Closes every target made here (rejecting what they have in flight) and the connections. */
  async close(): Promise<void> {
    await Promise.all([...this.targets].map((target) => target.close()));
    await this.links.close();
  }

  /** What sources made here take from `connect()` unless told otherwise. */
  private sourceDefaults(): Omit<RabbitSourceOptions, 'connection'> {
    return {
      ...this.reach(),
      logger: this.links.main.logger,
      ...(this.stallTimeoutMs === undefined ? {} : { stallTimeoutMs: this.stallTimeoutMs }),
    };
  }

  /** Refuses a name RabbitMQ would not serve on this connection's vhost (`checkStreamName`). */
  private checkStream(parameter: string, name: string): void {
    checkStreamName(parameter, name, this.params.vhost);
  }

  /** How connections made here reach the cluster's nodes. */
  private reach(): MemberReach {
    return { addressResolver: this.links.resolver, knownNodes: this.links.known };
  }

  /** A management request, on the URL's node, or on another node while that one is down. */
  private async request<T extends Response>(request: Request, timeoutMs: number): Promise<T> {
    return (await this.links.anyUp(this.links.main, timeoutMs)).request<T>(request, timeoutMs);
  }

  private freePublisherId(): number {
    for (let id = 0; id < MAX_PUBLISHERS; id++) {
      if (!this.usedPublisherIds.has(id)) return id;
    }
    throw new ConfigError(
      'target',
      `can be opened at most ${MAX_PUBLISHERS} times per connection; close unused targets or connect again`,
      this.targets.size + 1,
    );
  }
}

/** RabbitMQ's `x-` stream arguments for `options`. */
function streamArguments(options: StreamOptions): CreateStreamArguments {
  const size = options.initialClusterSize;
  if (size !== undefined && (!Number.isInteger(size) || size < 1)) {
    throw new ConfigError('initialClusterSize', 'must be an integer >= 1', size);
  }
  return {
    ...(size === undefined ? {} : { 'initial-cluster-size': size }),
    ...(options.maxAge === undefined ? {} : { 'max-age': options.maxAge }),
    ...(options.maxLengthBytes === undefined ? {} : { 'max-length-bytes': options.maxLengthBytes }),
    ...(options.maxSegmentSizeBytes === undefined
      ? {}
      : { 'stream-max-segment-size-bytes': options.maxSegmentSizeBytes }),
  };
}

/**
 * Connects to RabbitMQ's stream port, given a URL such as
 * `rabbitmq-stream://guest:guest@127.0.0.1:5552/` (RABBITMQ_STREAM_URL), the URLs of several
 * nodes of one cluster (tried in turn, as the Java client's `uris`, each after at most 500
 * ms: see `connectTimeoutMs`), or the client's connection settings. Fails when no node can be
 * reached now, unless `waitForBrokerMs` gives them time to come up; a refused user, password
 * or virtual host fails at once with
 * AccessRefusedError. Once connected, a lost connection is re-established in the background
 * (reported to `logger`), on the URLs' nodes and the members met since, in turn.
 */
export async function connect(
  where: string | readonly string[] | ClientParams,
  options: ConnectOptions = {},
): Promise<RabbitMQ> {
  if (typeof where === 'string') return RabbitMQ.open(parseStreamUrl(where), options);
  if (!Array.isArray(where)) return RabbitMQ.open(where as ClientParams, options);
  const { params, nodes } = parseStreamUrls(where as readonly string[]);
  return RabbitMQ.open(params, options, nodes);
}
