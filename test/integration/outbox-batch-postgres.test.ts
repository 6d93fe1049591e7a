// writeOutboxAll on PostgreSQL through pg, which writes the arrays' literals itself: the rows
// and key claims writeOutbox gives for each event, byte for byte; a list over 16 MB cut into
// statements; and against concurrent transactions, a list waits for a key an open younger
// transaction claimed, and is refused with an OutboxOrderError naming the first such event
// once that transaction commits (the older one aborted, its retry passing), or goes through
// once it rolls back. Correctness only: `npm run bench -- outbox-write` measures the speed.
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { OutboxOrderError } from '../../src/common/errors.js';
import { postgres } from '../../src/postgres/index.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { writeOutbox, writeOutboxAll } from '../../src/outbox/outbox-write.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { VARIED_OUTBOX_EVENTS } from '../support/jobs/outbox-events.js';
import {
  claimedByYounger,
  counting,
  currentTxid,
  storedClaims,
  storedRows,
} from '../support/jobs/outbox-rows.js';
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

/** Runs `work` in a transaction of `client`, committed, or rolled back when it throws. */
async function inTransaction<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  }
}

describe('writeOutboxAll on PostgreSQL', () => {
  it(
    'writes, in one statement, the rows writeOutbox writes for each event, byte for byte, with the same key claims',
    async () => {
      const [singles, batch] = ['outbox_batch_singles', 'outbox_batch_list'];
      const pool = pgt.pool({ max: 1 });
      for (const table of [singles, batch]) await createOutboxTable(postgres(pool), table);
      const client = await pool.connect();
      try {
        const counted = counting(client);
        const { singleIds, listIds, txid } = await inTransaction(client, async () => {
          const singleIds: bigint[] = [];
          for (const event of VARIED_OUTBOX_EVENTS) {
            singleIds.push(await writeOutbox(client, event, { table: singles }));
          }
          const listIds = await writeOutboxAll(counted, VARIED_OUTBOX_EVENTS, { table: batch });
          return { singleIds, listIds, txid: await currentTxid(client) };
        });
        expect(counted.statements).toBe(1);
        expect(listIds).toEqual(singleIds);
        const rows = await storedRows(client, batch);
        expect(rows).toEqual(await storedRows(client, singles));
        expect(rows.map((row) => row.key)).toEqual(VARIED_OUTBOX_EVENTS.map((event) => event.key));
        expect(new Set(rows.map((row) => row.txid))).toEqual(new Set([txid]));
        expect(rows[2]).toMatchObject({
          content_type: 'application/x-test; q="1"',
          body: '000102ff5c22',
        });
        expect(await storedClaims(client, batch)).toEqual(await storedClaims(client, singles));
      } finally {
        client.release();
      }
    },
    bound(60_000),
  );

  it(
    'cuts a list of more than 16 MB into statements of up to 16 MB, ids in the list order; a refusal in a later one names its event and aborts the transaction',
    async () => {
      const table = 'outbox_batch_large';
      const pool = pgt.pool({ max: 1 });
      await createOutboxTable(postgres(pool), table);
      const client = await pool.connect();
      try {
        // 3 MB bodies, 6 MB in hex: two to a statement.
        const bodies = [0, 1, 2].map((i) => new Uint8Array(3_000_000).fill(i));
        const events = bodies.map((bytes, i): OutboxEvent => ({ key: `k${i % 2}`, bytes }));
        const counted = counting(client);
        const ids = await inTransaction(client, () => writeOutboxAll(counted, events, { table }));
        expect(counted.statements).toBe(2);
        expect(ids).toEqual([1n, 2n, 3n]);
        const { rows } = await client.query<{ digest: string }>(
          `SELECT md5(body) AS digest FROM ${table} ORDER BY id`,
        );
        expect(rows.map((row) => row.digest)).toEqual(
          bodies.map((body) => createHash('md5').update(body).digest('hex')),
        );

        await claimedByYounger(client, table, 'late');
        const refusing = counting(client);
        await client.query('BEGIN');
        const refused = await writeOutboxAll(refusing, [...events, { key: 'late', json: 0 }], {
          table,
        }).catch((error: unknown) => error);
        expect(refused).toBeInstanceOf(OutboxOrderError);
        expect(refused).toMatchObject({ key: 'late', index: 3 });
        // Two events, then the third with the refused one, then the refused one's own insert.
        expect(refusing.statements).toBe(3);
        await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' });
        await client.query('ROLLBACK');
        expect(await storedRows(client, table), 'the first list only').toHaveLength(3);
      } finally {
        await client.query('ROLLBACK').catch(() => undefined);
        client.release();
      }
    },
    bound(60_000),
  );

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
          expect(outcome).toMatchObject({ key: 'shared', index: 1, table, retriable: true });
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
});
