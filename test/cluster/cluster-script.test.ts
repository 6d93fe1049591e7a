// Against the real 3-node cluster (scripts/rabbitmq.sh cluster, or RABBITMQ_CLUSTER_URLS for
// the URLs; stopping and starting nodes needs the local one). These tests stop nodes, so they
// run in vitest.config.ts's 'cluster' project: one file at a time, beside the other tests.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { CreateStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/create_stream_request.js';
import { DeleteStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_stream_request.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { silentLogger } from '../../src/common/logger.js';
import {
  clusterUrls,
  nodeOfPort,
  startNode,
  stopNode,
  streamMembers,
  type ClusterNode,
  type StreamMembers,
} from '../support/brokers/rabbitmq-cluster.js';

const script = fileURLToPath(new URL('../../scripts/rabbitmq.sh', import.meta.url));
// A leader change takes about a second here; a node that starts is back as a replica within
// seconds. Bounds, not expectations.
const electionTimeoutMs = 30_000;
const rejoinTimeoutMs = 60_000;

function openOn(url: string): Promise<Connection> {
  return Connection.connect({ ...parseStreamUrl(url), connectionId: randomUUID() }, silentLogger);
}

/** The members of `stream` as node `n` sees them, on a connection of its own. */
async function membersSeenBy(n: ClusterNode, stream: string): Promise<StreamMembers> {
  const connection = await openOn(clusterUrls()[n - 1] ?? '');
  try {
    return await streamMembers(connection, stream);
  } finally {
    await connection.close();
  }
}

const created: string[] = [];
async function newReplicatedStream(): Promise<string> {
  const stream = `cluster-script-${randomUUID().slice(0, 8)}`;
  const connection = await openOn(clusterUrls()[0] ?? '');
  try {
    await connection.sendAndWait(
      new CreateStreamRequest({ stream, arguments: { 'initial-cluster-size': 3 } }),
    );
  } finally {
    await connection.close();
  }
  created.push(stream);
  return stream;
}

const stopped = new Set<ClusterNode>();
afterAll(async () => {
  // A failed test must not leave a node down for the next file.
  for (const n of stopped) await startNode(n);
  const connection = await openOn(clusterUrls()[0] ?? '');
  for (const stream of created) await connection.sendAndWait(new DeleteStreamRequest(stream));
  await connection.close();
});

function portsOf(members: StreamMembers): number[] {
  return [members.leader, ...members.replicas].map((member) => member?.port ?? 0).sort();
}

describe('scripts/rabbitmq.sh cluster', () => {
  it('reports three running nodes, and a start of the running cluster prints node 1 URL', async () => {
    const run = promisify(execFile);
    const status = await run(script, ['cluster', 'status']);
    expect(status.stdout.trim().split('\n')).toEqual(
      clusterUrls().map((url, index) => `rabbit-${index + 1}@localhost ${url} running`),
    );
    const start = await run(script, ['cluster', 'start']);
    expect(start.stdout.trim()).toBe(clusterUrls()[0]);
  });

  it('has each node advertise 127.0.0.1 and its own stream port when a client connects', async () => {
    for (const url of clusterUrls()) {
      const connection = await openOn(url);
      const { host, port } = connection.getConnectionInfo();
      await connection.close();
      expect({ host, port }).toEqual({ host: '127.0.0.1', port: Number(new URL(url).port) });
    }
  });

  it('places a stream of initial cluster size 3 on all three nodes, one leader and two replicas', async () => {
    const stream = await newReplicatedStream();
    const allPorts = clusterUrls()
      .map((url) => Number(new URL(url).port))
      .sort();
    for (const n of [1, 2, 3] as const) {
      // Replicas start a moment after the leader.
      const members = await vi.waitFor(
        async () => {
          const seen = await membersSeenBy(n, stream);
          if (seen.replicas.length < 2) throw new Error(`node ${n} sees ${JSON.stringify(seen)}`);
          return seen;
        },
        { timeout: rejoinTimeoutMs, interval: 200 },
      );
      expect(members.code).toBe(0x01);
      expect(portsOf(members)).toEqual(allPorts);
      expect([members.leader, ...members.replicas].map((member) => member?.host)).toEqual([
        '127.0.0.1',
        '127.0.0.1',
        '127.0.0.1',
      ]);
    }
  });

  it('elects a new leader when the leader node stops, and takes the node back as a replica when it starts', async () => {
    const stream = await newReplicatedStream();
    const before = await vi.waitFor(
      async () => {
        const seen = await membersSeenBy(1, stream);
        if (seen.leader === undefined || seen.replicas.length < 2)
          throw new Error(JSON.stringify(seen));
        return seen;
      },
      { timeout: rejoinTimeoutMs, interval: 200 },
    );
    const leader = nodeOfPort(before.leader?.port ?? 0);
    const survivor = ([1, 2, 3] as const).find((n) => n !== leader) ?? 1;

    stopped.add(leader);
    await stopNode(leader);
    const after = await vi.waitFor(
      async () => {
        const seen = await membersSeenBy(survivor, stream);
        if (seen.code !== 0x01 || seen.leader === undefined) throw new Error(JSON.stringify(seen));
        return seen;
      },
      { timeout: electionTimeoutMs, interval: 100 },
    );
    expect(nodeOfPort(after.leader?.port ?? 0)).not.toBe(leader);
    expect(after.replicas.map((replica) => replica.port)).not.toContain(before.leader?.port);
    // The single broker shares the chroot; stopping a cluster node must not take it down.
    const single = await openOn(inject('rabbitmqUrl'));
    await single.close();

    await startNode(leader);
    stopped.delete(leader);
    const back = await vi.waitFor(
      async () => {
        const seen = await membersSeenBy(survivor, stream);
        if (seen.replicas.length < 2) throw new Error(JSON.stringify(seen));
        return seen;
      },
      { timeout: rejoinTimeoutMs, interval: 200 },
    );
    expect(back.leader?.port).toBe(after.leader?.port);
    expect(back.replicas.map((replica) => replica.port)).toContain(before.leader?.port);
  });
});
