/**
 * Vitest global setup: makes sure a RabbitMQ stream broker, a 3-node RabbitMQ cluster and a
 * PostgreSQL server are there before any test runs.
 *
 * `RABBITMQ_STREAM_URL` names an existing broker; without it, `scripts/rabbitmq.sh start`
 * starts (and on the first run builds) the local one. `RABBITMQ_CLUSTER_URLS` names an
 * existing cluster (the stream URLs of its nodes, comma-separated, node 1 first); without it,
 * `scripts/rabbitmq.sh cluster start` starts the local one (rabbit-1..3@localhost on stream
 * ports 5561-5563) from the same chroot. `POSTGRES_URL` names an existing PostgreSQL server
 * (its user must be allowed to create databases); without it, `scripts/postgres.sh start`
 * starts (and on the first run builds) the local one on port 5433. All start at once. Tests
 * read the URLs with `inject('rabbitmqUrl')`, `inject('rabbitmqClusterUrls')` (or
 * test/support/brokers/rabbitmq-cluster.ts) and `inject('postgresUrl')` (or
 * test/support/brokers/postgres.ts);
 * `process.env.RABBITMQ_STREAM_URL`, `RABBITMQ_CLUSTER_URLS` and `POSTGRES_URL` are set as
 * well, for child processes such as the crash tests' aggregator.
 *
 * When any cannot be had this throws, so the run fails saying why: integration and cluster
 * tests are never silently skipped.
 *
 * All are left running after the tests: they start in seconds but not instantly, and
 * several test runs (watch mode, parallel checkouts) share them, so one run stopping them
 * would break another. `scripts/rabbitmq.sh stop`, `scripts/rabbitmq.sh cluster stop` and
 * `scripts/postgres.sh stop` stop them; CI calls them when it is done.
 */
import { connect as connectTcp } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { runStartScript } from '../support/brokers/start-script.js';

declare module 'vitest' {
  export interface ProvidedContext {
    rabbitmqUrl: string;
    /** The stream URLs of the cluster's nodes, node 1 first. */
    rabbitmqClusterUrls: string[];
    /**
     * A PostgreSQL server whose user may create databases (test/support/brokers/postgres.ts
     * makes one per file).
     */
    postgresUrl: string;
  }
}

const rabbitmqScript = fileURLToPath(new URL('../../scripts/rabbitmq.sh', import.meta.url));
const postgresScript = fileURLToPath(new URL('../../scripts/postgres.sh', import.meta.url));
// The first run builds the broker's and the database's root folders (about a minute each,
// at once) before starting them.
const startTimeoutMs = 600_000;
const probeTimeoutMs = 5_000;

export default async function setup(project: TestProject): Promise<void> {
  const [url, clusterUrls, postgresUrl] = await Promise.all([
    process.env.RABBITMQ_STREAM_URL ?? startLocalBroker(),
    clusterUrlsFromEnv() ?? startLocalCluster(),
    process.env.POSTGRES_URL ?? startLocalPostgres(),
  ]);
  await Promise.all([
    ...[url, ...clusterUrls].map((broker) => probe(broker, 'a RabbitMQ stream broker', 5552)),
    probe(postgresUrl, 'a PostgreSQL server', 5432),
  ]);
  process.env.RABBITMQ_STREAM_URL = url;
  process.env.RABBITMQ_CLUSTER_URLS = clusterUrls.join(',');
  process.env.POSTGRES_URL = postgresUrl;
  project.provide('rabbitmqUrl', url);
  project.provide('rabbitmqClusterUrls', clusterUrls);
  project.provide('postgresUrl', postgresUrl);
}

function clusterUrlsFromEnv(): string[] | undefined {
  const urls = process.env.RABBITMQ_CLUSTER_URLS?.split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  return urls === undefined || urls.length === 0 ? undefined : urls;
}

async function startLocalBroker(): Promise<string> {
  return lastLine(
    await runScript(rabbitmqScript, ['start'], 'a RabbitMQ stream broker', 'RABBITMQ_STREAM_URL'),
    "integration tests need a RabbitMQ stream broker: 'scripts/rabbitmq.sh start' printed no URL",
  );
}

async function startLocalPostgres(): Promise<string> {
  return lastLine(
    await runScript(postgresScript, ['start'], 'a PostgreSQL server', 'POSTGRES_URL'),
    "integration tests need a PostgreSQL server: 'scripts/postgres.sh start' printed no URL",
  );
}

/** The URL a script printed last. */
function lastLine(stdout: string, missing: string): string {
  const url = stdout.trim().split('\n').pop();
  if (!url) throw new Error(missing);
  return url;
}

/** Starts the local cluster, then reads its nodes' URLs from `cluster status`. */
async function startLocalCluster(): Promise<string[]> {
  const what = 'a 3-node RabbitMQ cluster';
  await runScript(rabbitmqScript, ['cluster', 'start'], what, 'RABBITMQ_CLUSTER_URLS');
  const status = await runScript(
    rabbitmqScript,
    ['cluster', 'status'],
    what,
    'RABBITMQ_CLUSTER_URLS',
  );
  // One line per node: `rabbit-N@localhost <stream URL> running|stopped`.
  return status
    .trim()
    .split('\n')
    .map((line) => line.split(' ')[1] ?? '');
}

function runScript(
  script: string,
  args: string[],
  what: string,
  variable: string,
): Promise<string> {
  return runStartScript({ script, args, what, variable, timeoutMs: startTimeoutMs });
}

/** Fails fast, naming the URL, when nothing listens there (rather than every test timing out). */
async function probe(url: string, what: string, defaultPort: number): Promise<void> {
  const { hostname, port } = new URL(url);
  await new Promise<void>((resolve, reject) => {
    const socket = connectTcp({ host: hostname, port: Number(port || defaultPort) });
    const fail = (reason: string): void => {
      socket.destroy();
      reject(new Error(`integration tests need ${what}, but ${url} ${reason}`));
    };
    socket.setTimeout(probeTimeoutMs, () => fail(`did not answer within ${probeTimeoutMs} ms`));
    socket.once('error', (error) => fail(`refused the connection: ${error.message}`));
    socket.once('connect', () => {
      socket.end();
      resolve();
    });
  });
}
