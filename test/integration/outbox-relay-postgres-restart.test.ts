// The outbox relay across restarts of its PostgreSQL server (issue 29): four services write
// orders and their outbox rows in one transaction each (some rolled back, keys shared) while
// one relay run publishes them, and the server is stopped four times, fast and immediate (every
// process quits at once, as in a crash; the start recovers from the WAL), and started again.
// The relay's sessions and the services' break under them: the relay must keep running
// ('retry' events) and catch up after; a service whose transaction broke reads the table once
// the server is back (a COMMIT whose answer was lost may have committed) and runs it again
// only when it did not commit. The stream must hold every committed row once, each key in
// commit order (../support/jobs/outbox-orders.ts).
//
// Not the shared server: it stops and starts one of its own (scripts/postgres.sh on port 5436,
// root needed, as postgres-restart.test.ts). The broker stays up (see
// test/cluster/outbox-relay-broker-restart.test.ts for its restart).
import pg from 'pg';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { OWN_POSTGRES_PORTS, ownPostgres, type StopMode } from '../support/brokers/own-postgres.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { disturbedRelay, retryingRelay } from '../support/jobs/disturbed-relay.js';
import { until } from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';

/** The stops, in order: each followed by a start. */
const STOPS: readonly StopMode[] = ['fast', 'immediate', 'fast', 'immediate'];
/** Rows the relay publishes, and transactions the services commit, between two stops. */
const ROWS_BETWEEN = 100;
const COMMITS_BETWEEN = 10;

const server = ownPostgres(
  OWN_POSTGRES_PORTS.relayRestart,
  'outbox-relay-postgres-restart.test.ts',
);
const rabbit = rabbitForTests();
const SEED = Number(process.env.OUTBOX_SEED ?? Date.now() % 2 ** 31);

afterAll(() => server.stop());

describe('the outbox relay while its PostgreSQL server restarts', () => {
  it(
    `publishes each committed row once, each key in commit order, through ${STOPS.length} restarts with services writing`,
    async () => {
      const started = Date.now();
      await server.start();
      const url = await server.createDatabase('sw_relay_restart');
      onTestFinished(() => server.dropDatabase(url));
      // Each pool ended after the test, however it ends.
      const pool = (max: number): pg.Pool => {
        const made = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5_000 });
        onTestFinished(() => made.end());
        return made;
      };
      const table = 'outbox_restart';
      const stream = await rabbit.newStream('outbox-pg-restart');
      const relay = retryingRelay(pool(2), rabbit.rabbit, table, stream);
      const downMs: number[] = [];

      const run = await disturbedRelay({
        pool: pool(4),
        table,
        relay,
        reader: rabbit.rabbit,
        seed: SEED,
        disrupt: async ({ published, retries, writers }) => {
          for (const mode of STOPS) {
            // The relay publishes and the services commit when the server goes.
            const [rows, commits] = [published(), writers.committed];
            await until(
              () =>
                published() >= rows + ROWS_BETWEEN &&
                writers.committed >= commits + COMMITS_BETWEEN,
              bound(60_000),
              'the relay to publish and the services to commit',
            );
            const [retried, interrupted] = [retries.length, writers.interrupted];
            const down = Date.now();
            await server.stop(mode);
            try {
              await expect(server.status()).rejects.toMatchObject({ code: 1 });
              // Both met the server gone: the relay retries, the services' transactions broke.
              await until(
                () => retries.length > retried && writers.interrupted > interrupted,
                bound(30_000),
                `a relay retry and a broken transaction after the ${mode} stop`,
              );
            } finally {
              await server.start();
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
        `outbox relay across PostgreSQL restarts (seed ${SEED}): ${STOPS.length} restarts ` +
          `(${STOPS.join(', ')}; down ${downMs.join(', ')} ms), ${run.rows} rows from ` +
          `${writers.committed} transactions (${writers.rolledBack} rolled back, ` +
          `${writers.interrupted} broken by a stop, ${writers.committedUnanswered} of them ` +
          `committed without an answer), relay retries ${summary.retries}, ` +
          `${summary.published} rows confirmed to the relay; ${Date.now() - started} ms`,
      );
      expect(summary.retries).toBeGreaterThanOrEqual(STOPS.length);
      expect(writers.interrupted).toBeGreaterThanOrEqual(STOPS.length);
      expect(writers.rolledBack).toBeGreaterThan(0);
    },
    // 12 to 18 s at a load average of 9 on two cores, 80 to 90 s at 25 (the server's starts).
    bound(180_000),
  );
});
