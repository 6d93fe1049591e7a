// Connecting to one node of a cluster through an address resolver (a load balancer's rule),
// against the real broker: a connection counts only when the node it landed on, as the
// broker's Open response advertises it, is the node asked for.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { BrokerUnavailableError, ConfigError } from '../../src/index.js';
import { abandon } from '../../src/rabbitmq/gaps/client-socket.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { KnownNodes } from '../../src/rabbitmq/cluster/known-nodes.js';
import {
  advertisedNode,
  openAnyNode,
  openMemberConnection,
  openNodeConnection,
} from '../../src/rabbitmq/cluster/node-connection.js';
import type { NodeAddress } from '../../src/rabbitmq/cluster/stream-members.js';
import { uniqueStream } from '../support/brokers/rabbitmq.js';
import { startBalancer, type TcpBalancer } from '../support/brokers/tcp-balancer.js';
import { startBlackHole } from '../support/brokers/black-hole.js';
import { bound } from '../support/timing.js';

const params = parseStreamUrl(inject('rabbitmqUrl'));

/** One broker behind a balancer: every connection through it lands on that broker's node. */
let balancer: TcpBalancer;
let viaBalancer: NodeAddress;
let rabbit: RabbitMQ;
beforeAll(async () => {
  balancer = await startBalancer([params]);
  viaBalancer = { host: balancer.host, port: balancer.port };
  rabbit = await connect(params);
});
afterAll(async () => {
  await rabbit.close();
  await balancer.close();
});

describe('a connection to a cluster node through an address resolver', () => {
  it('should be kept at the first try when it lands on the node asked for', async () => {
    const stream = uniqueStream('node-connection');
    await rabbit.createStream(stream);
    const { leader } = await rabbit.members(stream);
    await rabbit.deleteStream(stream);
    const before = balancer.connections;
    const connection = await openNodeConnection(params, leader, {
      addressResolver: () => viaBalancer,
      timeoutMs: bound(5_000),
    });
    expect(advertisedNode(connection)).toEqual(leader);
    expect(balancer.connections - before).toBe(1);
    abandon(connection);
  });

  it('should give up after (2 + cluster size)² tries that all land elsewhere, naming the node', async () => {
    const elsewhere = { host: 'node-b.example', port: 5552 };
    const before = balancer.connections;
    const opening = openNodeConnection(params, elsewhere, {
      addressResolver: () => viaBalancer,
      clusterSize: 2,
      timeoutMs: bound(5_000),
    });
    await expect(opening).rejects.toThrow(BrokerUnavailableError);
    await expect(opening).rejects.toThrow(
      'no connection to RabbitMQ node node-b.example:5552: 16 connections through the address ' +
        `resolver (to 127.0.0.1:${viaBalancer.port}) all landed on other nodes`,
    );
    expect(balancer.connections - before).toBe(16);
  });
});

describe('a connection to any node while the first one accepts and never answers', () => {
  it('should land on the next node, close the attempt on the first, and try that one last from then on', async () => {
    const hole = await startBlackHole();
    const frozen = { host: '127.0.0.1', port: hole.port };
    const live = { host: params.hostname, port: params.port };
    const known = new KnownNodes([frozen, live]);

    const connection = await openAnyNode(
      { ...params, hostname: frozen.host, port: frozen.port },
      { knownNodes: known, timeoutMs: bound(10_000) },
    );
    expect(connection.getConnectionInfo().port).toBe(params.port);
    expect(known.inTurn([frozen, live])).toEqual([live, frozen]);
    abandon(connection);
    await hole.allClosed();
    await hole.close();
  });

  it('should read on a replica that answers when the one picked first never does', async () => {
    const hole = await startBlackHole();
    const frozen = { host: '127.0.0.1', port: hole.port };
    const live = { host: params.hostname, port: params.port };
    const pickFirst = vi.spyOn(Math, 'random').mockReturnValue(0); // the frozen replica first
    try {
      const { connection } = await openMemberConnection(params, 'any-stream', 'replica', {
        members: { stream: 'any-stream', leader: live, replicas: [frozen, live] },
        timeoutMs: bound(10_000),
      });
      expect(connection.getConnectionInfo().port).toBe(params.port);
      expect(hole.connections).toBe(1);
      abandon(connection);
    } finally {
      pickFirst.mockRestore();
    }
    await hole.allClosed();
    await hole.close();
  });
});

describe("connect()'s cluster settings", () => {
  it.each([['an address resolver that is not a function', { addressResolver: 'lb:5552' }]])(
    'should refuse %s with a ConfigError before connecting',
    async (_, options) => {
      const before = balancer.connections;
      const throughBalancer = { ...params, hostname: viaBalancer.host, port: viaBalancer.port };
      await expect(connect(throughBalancer, options as never)).rejects.toThrow(
        new ConfigError('addressResolver', 'must be a function', 'lb:5552'),
      );
      expect(balancer.connections).toBe(before);
    },
  );

  it.each([0, -1, 1.5])(
    'should refuse an initial cluster size of %s with a ConfigError',
    async (size) => {
      await expect(
        rabbit.createStream(uniqueStream('cluster-size'), { initialClusterSize: size }),
      ).rejects.toThrow(new ConfigError('initialClusterSize', 'must be an integer >= 1', size));
    },
  );
});
