// writeOutboxAll on PGlite: a list of events written in one statement gives the rows, ids,
// key claims and refusals that writeOutbox called for each event in order gives. A list over
// 16 MB, cut into statements, is tested on PostgreSQL (outbox-batch-postgres.test.ts): on
// PGlite the database's work holds this thread.
import type { Transaction } from '@electric-sql/pglite';
import { describe, expect, it } from 'vitest';
import { ConfigError, OutboxOrderError } from '../../../src/common/errors.js';
import { pglite } from '../../../src/pglite/index.js';
import { createOutboxTable } from '../../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../../src/outbox/outbox-event.js';
import { writeOutbox, writeOutboxAll } from '../../../src/outbox/outbox-write.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import { BAD_OUTBOX_EVENTS, VARIED_OUTBOX_EVENTS } from '../../support/jobs/outbox-events.js';
import {
  claimedByYounger,
  counting,
  currentTxid,
  storedClaims,
  storedRows,
} from '../../support/jobs/outbox-rows.js';
import { bound } from '../../support/timing.js';

const db = pgliteForTests();

let tables = 0;
/** A fresh outbox table (its ids start at 1). */
async function freshTable(): Promise<string> {
  const table = `outbox_all_${++tables}`;
  await createOutboxTable(pglite(db), table);
  return table;
}

class Rollback extends Error {}

/** Runs `work` in a transaction and rolls it back; what `work` threw, else undefined. */
async function rolledBack(work: (tx: Transaction) => Promise<void>): Promise<unknown> {
  let thrown: unknown;
  await db
    .transaction(async (tx) => {
      await work(tx).catch((error: unknown) => (thrown = error));
      throw new Rollback();
    })
    .catch((error: unknown) => {
      if (!(error instanceof Rollback)) throw error;
    });
  return thrown;
}

describe('writeOutboxAll on PGlite', () => {
  it(
    'writes, in one statement, the rows writeOutbox writes for each event, byte for byte, with the same key claims',
    async () => {
      const [singles, batch] = [await freshTable(), await freshTable()];
      const singleIds: bigint[] = [];
      let batchIds: bigint[] = [];
      let statements = 0;
      let txid = '';
      await db.transaction(async (tx) => {
        for (const event of VARIED_OUTBOX_EVENTS)
          singleIds.push(await writeOutbox(tx, event, { table: singles }));
        const counted = counting(tx);
        batchIds = await writeOutboxAll(counted, VARIED_OUTBOX_EVENTS, { table: batch });
        statements = counted.statements;
        txid = await currentTxid(tx);
      });
      expect(statements).toBe(1);
      expect(batchIds).toEqual(singleIds);
      expect(batchIds).toEqual(VARIED_OUTBOX_EVENTS.map((_, i) => BigInt(i + 1)));
      const rows = await storedRows(db, batch);
      expect(rows).toEqual(await storedRows(db, singles));
      expect(rows.map((row) => row.key)).toEqual(VARIED_OUTBOX_EVENTS.map((event) => event.key));
      expect(new Set(rows.map((row) => row.txid))).toEqual(new Set([txid]));
      expect(rows[2]).toMatchObject({
        content_type: 'application/x-test; q="1"',
        body: '000102ff5c22',
        event_ms: '8640000000000000',
      });
      expect(JSON.parse(rows[2]?.headers ?? '')).toEqual(VARIED_OUTBOX_EVENTS[2]?.headers);
      expect(await storedClaims(db, batch)).toEqual(await storedClaims(db, singles));
      expect((await storedClaims(db, batch)).map((claim) => claim.last_txid)).toEqual(
        Array.from({ length: 5 }, () => txid),
      );
    },
    bound(30_000),
  );

  it.each([
    ['one key', 1],
    ['1,000 keys', 1_000],
  ])(
    'writes 1,000 events on %s in one statement, their ids rising in the list order, between single writes of the same transaction',
    async (_, keys) => {
      const table = await freshTable();
      const events: OutboxEvent[] = Array.from({ length: 1_000 }, (_, i) => ({
        key: `k${i % keys}`,
        json: { i },
        eventTime: i,
      }));
      const ids: bigint[] = [];
      let statements = 0;
      let txid = '';
      await db.transaction(async (tx) => {
        ids.push(await writeOutbox(tx, { key: 'k0', json: 'before' }, { table }));
        const counted = counting(tx);
        ids.push(...(await writeOutboxAll(counted, events, { table })));
        statements = counted.statements;
        ids.push(await writeOutbox(tx, { key: 'k1', json: 'after' }, { table }));
        txid = await currentTxid(tx);
      });
      expect(statements).toBe(1);
      expect(ids).toEqual(Array.from({ length: 1_002 }, (_, i) => BigInt(i + 1)));
      const rows = await storedRows(db, table);
      expect(rows.map((row) => row.event_ms)).toEqual([
        expect.any(String),
        ...events.map((_, i) => String(i)),
        expect.any(String),
      ]);
      expect(rows.slice(1, -1).map((row) => row.key)).toEqual(events.map((e) => e.key));
      const claims = await storedClaims(db, table);
      expect(claims).toHaveLength(Math.max(keys, 2));
      expect(claims.every((claim) => claim.last_txid === txid)).toBe(true);
    },
    bound(60_000),
  );

  it(
    'an event without a time gets the time of the call; an empty list sends nothing',
    async () => {
      const table = await freshTable();
      const before = Date.now();
      await db.transaction(async (tx) => {
        await writeOutboxAll(tx, [{ key: 'a', json: 1 }], { table });
        const counted = counting(tx);
        expect(await writeOutboxAll(counted, [], { table })).toEqual([]);
        expect(counted.statements).toBe(0);
      });
      const ms = Number((await storedRows(db, table))[0]?.event_ms);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(Date.now());
    },
    bound(30_000),
  );

  it(
    "refuses a bad event with a ConfigError naming its index and writeOutbox's rule, sending nothing",
    async () => {
      const table = await freshTable();
      const good: OutboxEvent = { key: 'k', json: 1 };
      await db.transaction(async (tx) => {
        for (const bad of BAD_OUTBOX_EVENTS) {
          const what = JSON.stringify(bad, (_, v: unknown) =>
            typeof v === 'bigint' ? `${v}n` : v,
          );
          const counted = counting(tx);
          const batch = await writeOutboxAll(counted, [good, good, bad as OutboxEvent, good], {
            table,
          }).catch((error: unknown) => error);
          expect(batch, what).toBeInstanceOf(ConfigError);
          expect(counted.statements, what).toBe(0);
          const single = await writeOutbox(counted, bad as OutboxEvent, { table }).catch(
            (error: unknown) => error,
          );
          expect(single, what).toBeInstanceOf(ConfigError);
          expect((batch as ConfigError).message, what).toBe(
            (single as ConfigError).message.replace(/^outbox /, 'outbox events[2] '),
          );
        }
        const notAList = await writeOutboxAll(tx, { key: 'k', json: 1 } as never, {
          table,
        }).catch((error: unknown) => error);
        expect(notAList).toBeInstanceOf(ConfigError);
        expect(notAList).toMatchObject({ parameter: 'outbox events' });
      });
      expect(await storedRows(db, table)).toEqual([]);
      expect(await storedClaims(db, table), 'no key claimed either').toEqual([]);
    },
    bound(30_000),
  );

  it.each([
    [['a', 'c', 'b', 'c', 'd'], 'c', 1],
    [['b', 'a', 'b'], 'b', 0],
    [['a', 'a', 'd', 'c', 'b'], 'c', 3],
    // A list of one event is sent as writeOutbox sends it.
    [['c'], 'c', 0],
  ])(
    'refuses %j, whose keys b and c a younger transaction committed, with an OutboxOrderError naming %s (events[%d]) as writeOutbox does, and aborts the transaction',
    async (keys, refused, index) => {
      const table = await freshTable();
      await claimedByYounger(db, table, 'b');
      await claimedByYounger(db, table, 'c');
      const claims = await storedClaims(db, table);
      const events = keys.map((key, i): OutboxEvent => ({ key, json: i }));
      const singles = await rolledBack(async (tx) => {
        for (const event of events) await writeOutbox(tx, event, { table });
      });
      expect(singles).toBeInstanceOf(OutboxOrderError);
      expect(singles).toMatchObject({ key: refused, table, retriable: true, index: undefined });
      let afterwards: unknown;
      const batch = await rolledBack(async (tx) => {
        try {
          await writeOutboxAll(tx, events, { table });
        } finally {
          afterwards = await tx.query('SELECT 1').catch((error: unknown) => error);
        }
      });
      expect(batch).toBeInstanceOf(OutboxOrderError);
      expect(batch).toMatchObject({ key: refused, table, retriable: true, index });
      expect((batch as OutboxOrderError).message).toContain(`key '${refused}' (events[${index}])`);
      expect((batch as OutboxOrderError).cause).toMatchObject({ code: '23502' });
      expect(afterwards, 'the transaction is aborted').toMatchObject({ code: '25P02' });
      expect(await storedRows(db, table)).toEqual([]);
      expect(await storedClaims(db, table)).toEqual(claims);
    },
    bound(30_000),
  );
});
