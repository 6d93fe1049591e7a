// The outbox relay across restarts of its broker (issue 29): four services write orders and
// their outbox rows in one transaction each (some rolled back, keys shared) into PostgreSQL
// while one relay run publishes them, and the broker node is stopped (`rabbitmqctl stop`) and
// started again three times. The relay must keep running ('retry' events) and catch up after;
// the stream must hold every committed row once, each key in commit order
// (../support/jobs/outbox-orders.ts).
//
// What it simulates: a single broker's restart as the relay sees it. The relay knows one node
// (its only URL) and its stream's only member is on that node, so the stop takes its
// connection, its producer and the whole stream away, and the start brings the stream and the
// producer's last publishing id back from the node's disk. The node is one of the 3-node
// cluster's, not the shared single broker, which the other test files use at the same time.
// What it does not: the other two nodes stay up (the cluster's metadata is never wholly gone),
// the stop is clean (a killed node or a lost disk is not tried), and no stream with replicas
// fails over (test/cluster/cluster-failover.test.ts does that under a job).
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { RelayBroker } from '../../src/outbox/outbox-relay.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { uniqueStream } from '../support/brokers/rabbitmq.js';
import {
  clusterUrls,
  nodeOfPort,
  startNode,
  stopNode,
  type ClusterNode,
} from '../support/brokers/rabbitmq-cluster.js';
import { disturbedRelay, retryingRelay } from '../support/jobs/disturbed-relay.js';
import { until } from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';

/** The node restarted: the relay's only node, and its stream's only member. */
const NODE: ClusterNode = 3;
const RESTARTS = 3;
/** Rows the relay publishes, and transactions the services commit, between two restarts. */
const ROWS_BETWEEN = 100;
const COMMITS_BETWEEN = 10;

const pgt = postgresForTests();
const SEED = Number(process.env.OUTBOX_SEED ?? Date.now() % 2 ** 31);

/** A connection to node 1, never stopped here: it reads the stream back and deletes it. */
let reader: RabbitMQ;
beforeAll(async () => {
  reader = await connect(clusterUrls()[0] as string);
});
afterAll(() => reader.close());

describe('the outbox relay while its broker restarts', () => {
  it(
    `publishes each committed row once, each key in commit order, through ${RESTARTS} restarts of its broker node with services writing`,
    async () => {
      const started = Date.now();
      const url = clusterUrls()[NODE - 1] as string;
      // Quick reconnections: the node is back in seconds, and each second waited is the test's.
      const broker = await connect(url, { initialDelayMs: 50, maxDelayMs: 500 });
      onTestFinished(() => broker.close());
      // Created on the node itself with one member: RabbitMQ puts it there (client-local).
      const stream = uniqueStream('outbox-broker-restart');
      await broker.createStream(stream, { initialClusterSize: 1 });
      onTestFinished(() => reader.deleteStream(stream));
      const members = await reader.members(stream);
      expect(nodeOfPort(members.leader.port)).toBe(NODE);
      expect(members.replicas).toEqual([]);

      const table = 'outbox_broker_restart';
      // A publish waits this long for its connection to come back before it fails (default
      // 30 s): the relay hears of the stop within seconds, as cluster-failover's job does.
      const relayBroker: RelayBroker = {
        target: (name, options) => broker.target(name, { ...options, confirmTimeoutMs: 5_000 }),
      };
      const relay = retryingRelay(
        pgt.pool({ max: 2, application_name: table }),
        relayBroker,
        table,
        stream,
      );
      const downMs: number[] = [];
      const run = await disturbedRelay({
        pool: pgt.pool({ max: 4 }),
        table,
        relay,
        reader,
        seed: SEED,
        disrupt: async ({ published, retries, writers }) => {
          for (let restart = 0; restart < RESTARTS; restart++) {
            // The relay publishes and the services commit when the node goes.
            const [rows, commits] = [published(), writers.committed];
            await until(
              () =>
                published() >= rows + ROWS_BETWEEN &&
                writers.committed >= commits + COMMITS_BETWEEN,
              bound(60_000),
              'the relay to publish and the services to commit',
            );
            const retried = retries.length;
            const down = Date.now();
            await stopNode(NODE);
            try {
              // The relay met its broker gone.
              await until(() => retries.length > retried, bound(30_000), 'a relay retry');
            } finally {
              await startNode(NODE); // whatever happened: the next cluster test needs the node
            }
            downMs.push(Date.now() - down);
          }
          const rows = published();
          await until(() => published() > rows, bound(60_000), 'the relay to publish again');
        },
      });
      // Nothing the relay lost or doubled: disturbedRelay checked the stream against the tables.
      const { writers, summary } = run;
      console.log(
        `outbox relay across broker restarts (seed ${SEED}): ${RESTARTS} restarts of node ` +
          `${NODE} (down ${downMs.join(', ')} ms), ${run.rows} rows from ${writers.committed} ` +
          `transactions (${writers.rolledBack} rolled back), relay retries ${summary.retries}, ` +
          `${summary.published} rows confirmed to the relay; ${Date.now() - started} ms`,
      );
      expect(summary.retries).toBeGreaterThanOrEqual(RESTARTS);
      expect(writers.rolledBack).toBeGreaterThan(0);
    },
    // Each restart is a stop and a start of the node by scripts/rabbitmq.sh: 10 to 60 s each
    // at a load average of 5 to 10 on two cores.
    bound(300_000),
  );
});
