// Helpers for tests against the 3-node RabbitMQ cluster of test/integration/global-setup.ts
// (scripts/rabbitmq.sh cluster, or the one RABBITMQ_CLUSTER_URLS names).
import { execFile } from 'node:child_process';
import { getPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { MetadataRequest } from 'rabbitmq-stream-js-client/dist/requests/metadata_request.js';
import type { MetadataResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_response.js';

/** A node of the cluster: 1, 2 or 3, in the order of `clusterUrls()`. */
export type ClusterNode = 1 | 2 | 3;

const script = fileURLToPath(new URL('../../../scripts/rabbitmq.sh', import.meta.url));
// rabbitmqctl stop waits for the node to shut down (a few seconds).
const stopTimeoutMs = 60_000;
// start-node waits for the boot (up to the script's 120 s) and the rejoin.
const startTimeoutMs = 180_000;
// A rabbitmqctl command starts a VM of its own: a second or two.
const ctlTimeoutMs = 30_000;

/** The stream URLs of the cluster's nodes, node 1 first. */
export function clusterUrls(): string[] {
  return inject('rabbitmqClusterUrls');
}

/** The node whose stream port is `port` (as the Metadata query names members). */
export function nodeOfPort(port: number): ClusterNode {
  const ports = clusterUrls().map((url) => Number(new URL(url).port));
  const index = ports.indexOf(port);
  if (index < 0)
    throw new Error(`port ${port} is none of the cluster's stream ports (${ports.join(', ')})`);
  return (index + 1) as ClusterNode;
}

/** Stops node `n` cleanly (`rabbitmqctl stop`); resolves once it is down. */
export function stopNode(n: ClusterNode): Promise<void> {
  return runClusterScript(['stop-node', String(n)], `stopping cluster node ${n}`, stopTimeoutMs);
}

/** Starts node `n` again; resolves once it is fully booted and back in the cluster. */
export function startNode(n: ClusterNode): Promise<void> {
  return runClusterScript(['start-node', String(n)], `starting cluster node ${n}`, startTimeoutMs);
}

/** Runs `rabbitmqctl args...` against node `n` (`scripts/rabbitmq.sh cluster ctl`). */
export function rabbitmqctl(n: ClusterNode, args: string[]): Promise<void> {
  return runClusterScript(['ctl', String(n), ...args], `rabbitmqctl on node ${n}`, ctlTimeoutMs);
}

async function runClusterScript(args: string[], what: string, timeoutMs: number): Promise<void> {
  // At the cluster's priority, not a niced test runner's (`nice -n 19 npx vitest`): a node
  // started from it would keep that niceness after the test, and a niced rabbitmqctl on a busy
  // machine outlasts the bounds above. Raising a priority takes root, which the script needs.
  const niceness = getPriority();
  const [command, commandArgs] =
    niceness > 0 && process.getuid?.() === 0
      ? ['nice', ['-n', String(-niceness), script, 'cluster', ...args]]
      : [script, ['cluster', ...args]];
  try {
    await promisify(execFile)(command, commandArgs, { timeout: timeoutMs });
  } catch (error) {
    const { stderr, killed } = error as { stderr?: string; killed?: boolean };
    const why =
      killed === true
        ? `it did not finish within ${timeoutMs} ms`
        : stderr?.trim() || (error as Error).message;
    throw new Error(`${what} failed ('scripts/rabbitmq.sh cluster ${args.join(' ')}'): ${why}`, {
      cause: error,
    });
  }
}

/** Where a stream's members are, as the broker's Metadata query answers on `connection`. */
export interface StreamMembers {
  /** The Metadata response code for the stream (0x01 when it has a leader). */
  readonly code: number;
  readonly leader?: { readonly host: string; readonly port: number };
  readonly replicas: readonly { readonly host: string; readonly port: number }[];
}

/** The Metadata query for `stream`, straight from the stock client (not the adapter's). */
export async function streamMembers(
  connection: Connection,
  stream: string,
): Promise<StreamMembers> {
  const response = await connection.sendAndWait<MetadataResponse>(
    new MetadataRequest({ streams: [stream] }),
  );
  const info = response.streamInfos.find((candidate) => candidate.streamName === stream);
  if (info === undefined) throw new Error(`the Metadata response does not mention ${stream}`);
  const member = ({ host, port }: { host: string; port: number }) => ({ host, port });
  return {
    code: info.responseCode,
    ...(info.leader === undefined ? {} : { leader: member(info.leader) }),
    replicas: (info.replicas ?? []).map(member),
  };
}
