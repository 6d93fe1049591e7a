// Two sink instances with one name on one stream, on the real PostgreSQL, both inside a batch
// transaction at once: the checkpoint row's lock (FOR UPDATE) makes the second wait for the
// first's commit and pass its batch over. (The PGlite tests cannot show it: one PGlite runs one
// transaction at a time.) Without the lock both apply the batch, and the table has every row twice.
// With no checkpoint row yet, the second waits on the first's insert of it instead, then reads
// the row the first committed.
import { beforeEach, describe, expect, it } from 'vitest';
import { jsonMessage } from '../../src/codecs/source-message.js';
import { databaseSink, eachBatch } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

const db = postgresForTests();
const MESSAGES = 10;

beforeEach(async () => {
  await db.query('DROP TABLE IF EXISTS applied, stream_windows_checkpoints');
  await db.query('CREATE TABLE applied (n int NOT NULL, instance text NOT NULL)');
  // A committed checkpoint row (nothing applied yet), so that the second instance's insert of a
  // missing row does not wait on the first's uncommitted one: only the row lock can make it wait.
  await db.query(
    'CREATE TABLE stream_windows_checkpoints (sink text NOT NULL, stream text NOT NULL, ' +
      'last_offset bigint NOT NULL, updated_at timestamptz NOT NULL DEFAULT now(), ' +
      'PRIMARY KEY (sink, stream))',
  );
});

/** Resolves once a session of the database waits on a lock (polled: the server's own view). */
async function someoneWaitsOnALock(): Promise<'waits'> {
  for (;;) {
    const waiting = await db.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if (waiting.length > 0) return 'waits';
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('databaseSink on PostgreSQL: two instances in a batch transaction at once', () => {
  it(
    'the second waits on the checkpoint row and passes the batch over: every message applied once',
    async () => {
      await db.query("INSERT INTO stream_windows_checkpoints VALUES ('twice', 'events', -1)");
      await twoInstancesAtOnce();
    },
    bound(60_000),
  );

  it(
    "with no checkpoint row yet, the second waits on the first's insert of it and passes the batch over",
    async () => {
      await twoInstancesAtOnce();
    },
    bound(60_000),
  );
});

/** Runs two instances whose transactions overlap, and checks every message was applied once. */
async function twoInstancesAtOnce(): Promise<void> {
  const broker = new MemoryBroker();
  broker.createStream('events');
  broker.append(
    'events',
    Array.from({ length: MESSAGES }, (_, n) => jsonMessage({ n })),
  );
  let firstInApply!: () => void;
  const firstApplies = new Promise<void>((resolve) => (firstInApply = resolve));
  let secondInApply!: () => void;
  const secondApplies = new Promise<'applies'>(
    (resolve) => (secondInApply = () => resolve('applies')),
  );
  const barrier: Array<'waits' | 'applies'> = [];

  const instance = (name: 'first' | 'second') =>
    databaseSink<{ n: number }>({
      name: 'twice',
      source: broker.source('events'),
      database: postgres({ connectionString: db.url, max: 2 }),
      maxBatchDelayMs: 0,
      into: eachBatch({
        apply: async (tx, batch) => {
          for (const message of batch.messages) {
            await tx.query('INSERT INTO applied VALUES ($1, $2)', [message.value.n, name]);
          }
          if (name === 'second') {
            secondInApply();
            return;
          }
          firstInApply();
          // The barrier: the first commits only once the second is in its own transaction,
          // waiting on a lock (FOR UPDATE) or applying (no lock).
          barrier.push(await Promise.race([someoneWaitsOnALock(), secondApplies]));
        },
      }),
    });
  const first = instance('first');
  const second = instance('second');
  const firstRun = first.run({ untilCaughtUp: true });
  await firstApplies;
  const [a, b] = await Promise.all([firstRun, second.run({ untilCaughtUp: true })]);
  await Promise.all([first.close(), second.close()]);

  const rows = await db.query<{ n: number; instance: string }>(
    'SELECT n, instance FROM applied ORDER BY n',
  );
  expect(rows.map((row) => row.n)).toEqual(Array.from({ length: MESSAGES }, (_, n) => n));
  expect(new Set(rows.map((row) => row.instance))).toEqual(new Set(['first']));
  expect(a.applied).toBe(MESSAGES);
  expect(b.applied).toBe(0);
  expect(b.skipped).toBe(MESSAGES);
  expect(barrier).toEqual(['waits']);
  expect(await db.query('SELECT last_offset::text AS o FROM stream_windows_checkpoints')).toEqual([
    { o: String(MESSAGES - 1) },
  ]);
}
