// The acceptance of the database sink against the real pair: a sink reading a RabbitMQ
// stream into PostgreSQL runs as a child process, SIGKILLed at random moments (right after a
// commit, or a few milliseconds later: mid-transaction or between the commit and the next
// read) and restarted, alone or as two instances with one name at once; the tables must then
// be exactly what the stream says: every event counted once, none lost.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { runChild } from '../support/children/killed-child.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import { expectedUsageTotals, feedUsage } from '../support/jobs/usage-totals.js';
import { bound } from '../support/timing.js';

const MESSAGES = 30_000;
const CUSTOMERS = 37;
const KILLS = 20;
const child = fileURLToPath(new URL('./sink-sigkill-child.ts', import.meta.url));
const rabbitmqUrl = inject('rabbitmqUrl');
const real = rabbitForTests();
const db = postgresForTests();
const source = real.track(uniqueStream('sink-sigkill'));

beforeAll(() => feedUsage(real.rabbit, source, MESSAGES, CUSTOMERS), bound(120_000));

async function freshTables(): Promise<void> {
  await db.query('DROP TABLE IF EXISTS totals, seen');
  await db.query(
    'CREATE TABLE totals (customer int PRIMARY KEY, cents bigint NOT NULL, messages bigint NOT NULL)',
  );
  // No unique constraint: an offset applied twice must show, not be refused.
  await db.query('CREATE TABLE seen (message_offset bigint NOT NULL)');
}

/** Transactions the server rolled back in the test's database (a client killed mid-transaction). */
async function rollbacks(): Promise<number> {
  const rows = await db.query<{ n: string }>(
    'SELECT xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]?.n ?? 0);
}

/** The sink's checkpoint; -1 before the sink made its table or row. */
async function checkpoint(sink: string): Promise<number> {
  // Asked first, so that no failed query adds to the rollbacks counted.
  const [table] = await db.query<{ made: boolean }>(
    "SELECT to_regclass('stream_windows_checkpoints') IS NOT NULL AS made",
  );
  if (table?.made !== true) return -1;
  const rows = await db.query<{ o: string }>(
    'SELECT last_offset::text AS o FROM stream_windows_checkpoints WHERE sink = $1',
    [sink],
  );
  return rows[0] === undefined ? -1 : Number(rows[0].o);
}

async function expectExactTables(sink: string): Promise<void> {
  const seen = await db.query<{ n: string; distinct: string; min: string; max: string }>(
    'SELECT count(*) AS n, count(DISTINCT message_offset) AS distinct, ' +
      'min(message_offset) AS min, max(message_offset) AS max FROM seen',
  );
  expect(seen).toEqual([
    { n: String(MESSAGES), distinct: String(MESSAGES), min: '0', max: String(MESSAGES - 1) },
  ]);
  expect(
    await db.query('SELECT customer, cents::text, messages::text FROM totals ORDER BY customer'),
  ).toEqual(expectedUsageTotals(MESSAGES, CUSTOMERS));
  expect(await checkpoint(sink)).toBe(MESSAGES - 1);
}

/**
 * Runs `instances` lanes at once, each starting the child again and again, killed after a
 * random number of its batches (at most an even share of the batches left, so the kills land
 * before the sink catches up), until `KILLS` kills in all; then each lane runs it once more to
 * completion. Returns the kills and the checkpoint after each.
 */
async function killAtRandom(sink: string, instances: number, seed: number) {
  const random = seededRandom(seed);
  const batch = 100 + Math.floor(random() * 200);
  const args = [rabbitmqUrl, db.url, source, sink, String(batch)];
  const checkpoints: number[] = [];
  let kills = 0;
  let inTransaction = 0;
  let skips = 0;
  const onMark = (mark: string): void => {
    if (mark === 's') skips++;
  };
  const lane = async (): Promise<void> => {
    while (kills < KILLS) {
      const batchesLeft = (MESSAGES - 1 - (await checkpoint(sink))) / batch;
      const share = Math.max(1, Math.floor(batchesLeft / ((KILLS - kills + 1) * instances)));
      const afterBatches = 1 + Math.floor(random() * share);
      // Every other kill from inside a batch's transaction (the child waits there for it);
      // the others right after a commit's mark, or a little later: mid-transaction, or
      // between the commit and the next read.
      const inApply = kills % 2 === 0;
      if (inApply) inTransaction++;
      const delayMs = inApply || random() < 0.5 ? 0 : Math.floor(random() * 40);
      const killed = inApply
        ? await runChild(child, [...args, String(afterBatches)], 1, 0, onMark)
        : await runChild(child, args, afterBatches, delayMs, onMark);
      expect(killed, 'the child finished before it was killed').toBe(true);
      kills++;
      checkpoints.push(await checkpoint(sink));
    }
    expect(await runChild(child, args, Infinity, 0, onMark)).toBe(false);
  };
  await Promise.all(Array.from({ length: instances }, lane));
  return { kills, checkpoints, batch, inTransaction, skips };
}

describe('a database sink from RabbitMQ into PostgreSQL, SIGKILLed at random', () => {
  it.each([
    ['one instance', 1],
    ['two instances with one name at once', 2],
  ])(
    `ends with the exact tables after ${KILLS} kills (%s)`,
    async (_, instances) => {
      await freshTables();
      const sink = `sigkill-${instances}`;
      const seed = Date.now() % 2 ** 31;
      const rollbacksBefore = await rollbacks();

      const { kills, checkpoints, batch, inTransaction, skips } = await killAtRandom(
        sink,
        instances,
        seed,
      );
      const rolledBack = (await rollbacks()) - rollbacksBefore;

      console.log(
        `sink SIGKILL test, ${instances} instance(s), seed ${seed}, ${batch} messages a batch: ` +
          `${kills} kills (${inTransaction} inside a transaction), ${rolledBack} transactions ` +
          `rolled back by the server, ${skips} batches with messages passed over, ` +
          `checkpoint after each: ${checkpoints.join(', ')}`,
      );
      await expectExactTables(sink);
      expect(kills).toBeGreaterThanOrEqual(KILLS);
      expect(new Set(checkpoints).size).toBeGreaterThan(KILLS / 2);
      // Each kill from inside a transaction rolls it back on the server.
      expect(inTransaction).toBeGreaterThanOrEqual(KILLS / 2);
      expect(rolledBack).toBeGreaterThanOrEqual(inTransaction);
      // Whether two instances overlap here is up to timing (a clean-clone CI run saw 0 batches
      // passed over): sink-postgres-lock.test.ts makes them overlap by a barrier and shows the
      // row lock's work; this test shows the tables stay exact either way.
    },
    bound(600_000),
  );
});
