// writeOutboxAll on PostgreSQL against concurrent transactions: a list of events waits for a
// key an open younger transaction claimed, and is refused with an OutboxOrderError naming the
// first such event once that transaction commits (the older one aborted, its retry passing),
// or goes through once it rolls back. Then what one statement saves: 10,000 events in one
// transaction, single writes against one list, on one key and on 10,000 keys.
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { OutboxOrderError } from '../../src/common/errors.js';
import { postgres } from '../../src/postgres/index.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { writeOutbox, writeOutboxAll } from '../../src/outbox/outbox-write.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { currentTxid, storedRows } from '../support/jobs/outbox-rows.js';
import { bound } from '../support/timing.js';

const pgt = postgresForTests();

const events = (keys: readonly string[], label: string): OutboxEvent[] =>
  keys.map((key, i) => ({ key, json: { label, i } }));

/** Resolves once the backend `pid` waits for a lock (a key claim another transaction holds). */
async function waitingForLock(pool: pg.Pool, pid: number): Promise<void> {
  const deadline = Date.now() + bound(20_000);
  for (;;) {
    const { rows } = await pool.query<{ waiting: boolean }>(
      "SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1",
      [pid],
    );
    if (rows[0]?.waiting === true) return;
    if (Date.now() > deadline) throw new Error(`backend ${pid} never waited for a lock`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function begin(pool: pg.Pool): Promise<{ client: pg.PoolClient; pid: number }> {
  const client = await pool.connect();
  await client.query('BEGIN');
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return { client, pid: (rows[0] as { pid: number }).pid };
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

describe('writeOutboxAll on PostgreSQL', () => {
  it.each([
    ['commits', 'refused, naming its first such event, and passes when run again', true],
    ['rolls back', 'written', false],
  ])(
    'a list waits for a key claimed by an open younger transaction; when that one %s, the list is %s',
    async (_, __, commits) => {
      const table = commits ? 'outbox_batch_commit' : 'outbox_batch_rollback';
      const pool = pgt.pool({ max: 4 });
      await createOutboxTable(postgres(pool), table);
      const older = await begin(pool);
      const younger = await begin(pool);
      try {
        // Transaction ids in this order: older, then younger.
        const olderTxid = BigInt(await currentTxid(older.client));
        const youngerTxid = BigInt(await currentTxid(younger.client));
        expect(youngerTxid).toBeGreaterThan(olderTxid);
        const youngerIds = await writeOutboxAll(
          younger.client,
          events(['x', 'shared', 'y'], 'younger'),
          { table },
        );
        const list = events(['a', 'shared', 'x', 'a'], 'older');
        const written = writeOutboxAll(older.client, list, { table }).catch(
          (error: unknown) => error,
        );
        await waitingForLock(pool, older.pid);
        await younger.client.query(commits ? 'COMMIT' : 'ROLLBACK');
        const outcome = await written;
        if (commits) {
          expect(outcome).toBeInstanceOf(OutboxOrderError);
          expect(outcome).toMatchObject({ key: 'shared', table, retriable: true });
          await expect(older.client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' });
          await older.client.query('ROLLBACK');
          // Run again, the transaction is younger than the one that committed the keys.
          await older.client.query('BEGIN');
          const retried = await writeOutboxAll(older.client, list, { table });
          await older.client.query('COMMIT');
          const rows = await storedRows(pool, table);
          expect(rows.map((row) => BigInt(row.id))).toEqual([...youngerIds, ...retried]);
          expect(rows.map((row) => row.key)).toEqual(['x', 'shared', 'y', 'a', 'shared', 'x', 'a']);
        } else {
          expect(outcome).toEqual([
            expect.any(BigInt),
            expect.any(BigInt),
            expect.any(BigInt),
            expect.any(BigInt),
          ]);
          await older.client.query('COMMIT');
          const rows = await storedRows(pool, table);
          expect(rows.map((row) => BigInt(row.id))).toEqual(outcome);
          expect(rows.map((row) => BigInt(row.txid))).toEqual(list.map(() => olderTxid));
        }
      } finally {
        for (const { client } of [older, younger]) {
          await client.query('ROLLBACK').catch(() => undefined);
          client.release();
        }
      }
    },
    bound(60_000),
  );

  it(
    'measures 10,000 events in one transaction: single writes against one list, on 1 key and on 10,000 keys',
    async () => {
      const table = 'outbox_batch_timing';
      const pool = pgt.pool({ max: 1 });
      await createOutboxTable(postgres(pool), table);
      const client = await pool.connect();
      try {
        const figures: Record<string, number[]> = {};
        /** One transaction of `list` written by `how`, from BEGIN to COMMIT, in ms. */
        const timed = async (
          name: string,
          list: readonly OutboxEvent[],
          how: 'single' | 'list',
        ): Promise<void> => {
          await client.query(`TRUNCATE ${table}, ${table}_keys`);
          const started = performance.now();
          await client.query('BEGIN');
          if (how === 'list') {
            await writeOutboxAll(client, list, { table });
          } else {
            for (const event of list) await writeOutbox(client, event, { table });
          }
          await client.query('COMMIT');
          (figures[`${name} ${how}`] ??= []).push(performance.now() - started);
          const { rows } = await client.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${table}`,
          );
          expect(rows[0]?.n).toBe(list.length);
        };
        const cases = [1, 10_000].map(
          (keys) =>
            [
              keys === 1 ? '1 key' : '10,000 keys',
              Array.from({ length: 10_000 }, (_, i): OutboxEvent => ({
                key: `order-${i % keys}`,
                json: { order: i, cents: (i * 37) % 10_000, region: 'north' },
              })),
            ] as const,
        );
        // Interleaved rounds, so that the machine's load falls on both sides alike.
        for (let round = 0; round < 3; round++) {
          for (const [name, list] of cases) {
            const order =
              round % 2 === 0 ? (['single', 'list'] as const) : (['list', 'single'] as const);
            for (const how of order) await timed(name, list, how);
          }
        }
        const line = Object.entries(figures)
          .map(
            ([name, ms]) =>
              `${name}: ${Math.round(median(ms))} ms (${ms.map((v) => Math.round(v)).join(', ')})`,
          )
          .join('; ');
        console.log(`outbox writes, 10,000 events in one transaction, median of 3: ${line}`);
        for (const [name] of cases) {
          expect(median(figures[`${name} list`] ?? [])).toBeLessThan(
            median(figures[`${name} single`] ?? []),
          );
        }
      } finally {
        client.release();
      }
    },
    bound(240_000),
  );
});
