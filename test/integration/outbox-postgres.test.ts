// The outbox relay on PostgreSQL and RabbitMQ, against the commit-order trap: transaction ids
// are handed out in one order and transactions commit in another, so a relay that published
// rows as it saw them commit would skip a row an older transaction commits later. Concurrent
// writers with random commit delays, aborts and shared keys, a transaction holding a gap open,
// one of 10,000 rows, and a relay restarted mid-way: the stream must hold exactly the committed
// rows, once each, in (txid, id) order, each key's in its commit order. Then two relays of one
// name at once, and the same scripted transactions on PGlite + the embedded broker and on
// PostgreSQL + RabbitMQ giving the same messages.
import { PGlite } from '@electric-sql/pglite';
import type pg from 'pg';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { OutboxOrderError } from '../../src/common/errors.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { pglite } from '../../src/pglite/index.js';
import { postgres } from '../../src/postgres/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { OutboxRelay, type RelayBroker } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../src/outbox/outbox-event.js';
import { writeOutbox } from '../../src/outbox/outbox-write.js';
import type { SinkDatabase } from '../../src/database/sink-database.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import {
  expectExactlyCommitted,
  seenOutboxMessage,
  until,
  type CommittedRow,
  type SeenOutboxMessage,
} from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';
import { seededRandom as random } from '../support/arbitraries/seeded-random.js';

const rabbit = rabbitForTests();
const pgt = postgresForTests();

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What the writers committed: the rows, and each transaction's id and COMMIT times. */
class Ledger {
  readonly committed: CommittedRow[] = [];
  /** Each commit: its transaction id, rows, and when its COMMIT was sent and answered. */
  readonly log: {
    txid: bigint;
    rows: readonly CommittedRow[];
    sent: number;
    done: number;
  }[] = [];
  /** What each writer is doing (diagnostics). */
  readonly phases: Record<string, string> = {};
  transactions = 0;
  rolledBack = 0;
  retries = 0;

  /**
   * Pairs of transactions sharing a key whose commit order is certain (the first's COMMIT was
   * answered before the second's was sent) but whose rows of that key the stream has the other
   * way round. A COMMIT answered later than another was sent proves nothing: the server may
   * have committed it (and let the other claim the key) before its answer went out.
   */
  keyOrderViolations(seen: readonly SeenOutboxMessage[]): string[] {
    const position = new Map(seen.map((message, index) => [message.id, index]));
    const found: string[] = [];
    for (const a of this.log) {
      for (const b of this.log) {
        if (!(a.done < b.sent)) continue;
        for (const key of new Set(a.rows.map((r) => r.key))) {
          const last = Math.max(
            ...a.rows.filter((r) => r.key === key).map((r) => position.get(r.id) ?? Infinity),
          );
          const ofB = b.rows.filter((r) => r.key === key);
          if (ofB.length === 0) continue;
          const first = Math.min(...ofB.map((r) => position.get(r.id) ?? -Infinity));
          if (last > first) {
            found.push(
              `key ${key}: txid ${a.txid} committed before txid ${b.txid} was sent, ` +
                `but the stream has row ${ofB[0]?.id} before the first's`,
            );
          }
        }
      }
    }
    return found;
  }

  commit(rows: readonly CommittedRow[]): void {
    this.transactions++;
    this.committed.push(...rows);
  }
}

/**
 * Runs one transaction on `pool` writing `keys`' rows, retried as a service would when the
 * outbox refuses a key's order or PostgreSQL a deadlock or serialization; records it in
 * `ledger` once committed, with when its COMMIT was sent and answered (see
 * `Ledger.keyOrderViolations`).
 */
async function transaction(
  pool: pg.Pool,
  table: string,
  ledger: Ledger,
  keys: readonly string[],
  label: string,
  options: { rollback?: boolean; rowDelayMs?: () => number; commitDelayMs?: number } = {},
): Promise<void> {
  for (;;) {
    const phase = (what: string): void => {
      ledger.phases[label.split('-')[0] as string] = `${label} ${what}`;
    };
    phase('connect');
    const client = await pool.connect();
    try {
      phase('begin');
      await client.query('BEGIN');
      const rows: CommittedRow[] = [];
      for (const [i, key] of keys.entries()) {
        const body = `${label}-${i}`;
        phase(`write ${i}`);
        const id = await writeOutbox(client, { key, json: body }, { table });
        rows.push({ id, key, body: JSON.stringify(body) });
        phase(`delay ${i}`);
        const delay = options.rowDelayMs?.() ?? 0;
        if (delay > 0) await pause(delay);
      }
      if (options.commitDelayMs !== undefined && options.commitDelayMs > 0) {
        await pause(options.commitDelayMs);
      }
      if (options.rollback === true) {
        await client.query('ROLLBACK');
        ledger.rolledBack++;
        return;
      }
      const txid = (
        await client.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid')
      ).rows[0]?.txid;
      const sent = performance.now();
      phase('commit');
      await client.query('COMMIT');
      phase('done');
      ledger.commit(rows);
      ledger.log.push({ txid: BigInt(txid ?? -1), rows, sent, done: performance.now() });
      return;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      const code = (error as { code?: unknown }).code;
      if (error instanceof OutboxOrderError || code === '40001' || code === '40P01') {
        ledger.retries++;
        continue;
      }
      throw error;
    } finally {
      client.release();
    }
  }
}

interface RelayLoop {
  readonly waiting: bigint[];
  readonly restarts: () => number;
  /** Stops the relay under way and resolves once it has. */
  stop(): Promise<void>;
}

/**
 * Runs relays of `name` one after another until stopped: each is aborted once the rows
 * published in all reach the next of `restartAt`, and a new one started.
 */
function relayLoop(
  make: () => OutboxRelay,
  restartAt: number[],
  published: { rows: number },
): RelayLoop {
  const waiting: bigint[] = [];
  let restarts = 0;
  const state = { stopped: false };
  let current: AbortController | undefined;
  const done = (async () => {
    while (!state.stopped) {
      const relay = make();
      const controller = new AbortController();
      current = controller;
      relay.on('waiting', (event) => waiting.push(event.openTransaction));
      relay.on('published', (event) => {
        published.rows += event.rows;
        if (restartAt.length > 0 && published.rows >= (restartAt[0] as number)) {
          restartAt.shift();
          controller.abort();
        }
      });
      await relay.run({ signal: controller.signal });
      await relay.close();
      // Stopped while it ran (TypeScript keeps the loop test's narrowing across the awaits).
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      if (!state.stopped) restarts++;
    }
  })();
  // Seen by stop(); a test that failed before stopping it has its loop stopped after it.
  done.catch(() => undefined);
  const loop: RelayLoop = {
    waiting,
    restarts: () => restarts,
    async stop() {
      state.stopped = true;
      current?.abort();
      running.delete(loop);
      await done;
    },
  };
  running.add(loop);
  return loop;
}

const running = new Set<RelayLoop>();
afterEach(async () => {
  for (const loop of running) await loop.stop().catch(() => undefined);
});

function relayOn(
  database: SinkDatabase,
  table: string,
  broker: RelayBroker,
  stream: string,
): OutboxRelay {
  return new OutboxRelay({
    name: 'relay',
    database,
    table,
    broker,
    to: stream,
    pollIntervalMs: 10,
    retryDelayMs: 10,
  });
}

/**
 * Resolves once the relays running have put every committed row on the stream (a relay's
 * backlog, asked without running it); fails after a bound with what the database is doing.
 */
async function caughtUp(pool: pg.Pool, table: string, stream: string): Promise<void> {
  const probe = relayOn(postgres(pool), table, rabbit.rabbit, stream);
  try {
    const deadline = Date.now() + bound(120_000);
    for (;;) {
      const { rows } = await probe.backlog();
      if (rows === 0n) return;
      if (Date.now() > deadline) {
        const activity = await pgt.query(
          'SELECT backend_xid::text AS xid, state, wait_event, left(query, 60) AS query ' +
            'FROM pg_stat_activity WHERE datname = current_database()',
        );
        throw new Error(
          `the relays did not catch up: ${rows} rows behind; pool ${pool.totalCount} ` +
            `connections, ${pool.idleCount} idle, ${pool.waitingCount} waiting; ` +
            JSON.stringify(activity),
        );
      }
      await pause(50);
    }
  } finally {
    await probe.close();
  }
}

async function seenOn(broker: RabbitMQ, stream: string): Promise<SeenOutboxMessage[]> {
  return (await readAll(broker, stream)).map((bytes) => seenOutboxMessage(bytes));
}

describe('outbox relay on PostgreSQL and RabbitMQ', () => {
  it(
    'publishes exactly the committed rows in (txid, id) order, each key in commit order, against concurrent writers, a long gap, 10,000 rows in one transaction and restarts',
    async () => {
      const stream = await rabbit.newStream('outbox-trap');
      const table = 'outbox_trap';
      const pool = pgt.pool({ max: 14 });
      await createOutboxTable(postgres(pool), table);
      const ledger = new Ledger();
      const published = { rows: 0 };
      const loop = relayLoop(
        () => relayOn(postgres(pool), table, rabbit.rabbit, stream),
        [200, 2_500, 6_000, 9_000],
        published,
      );
      const next = random(Number(process.env.OUTBOX_SEED ?? 29));
      const keys = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];

      // The gap: a transaction that takes its id first and commits only once the relay said
      // it waits for it (rows of younger transactions committed meanwhile are held back).
      let longTxid: bigint | undefined;
      const long = (async () => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const id = await writeOutbox(client, { key: 'long', json: 'long-0' }, { table });
          const { rows } = await client.query<{ txid: string }>(
            'SELECT pg_current_xact_id()::text AS txid',
          );
          longTxid = BigInt((rows[0] as { txid: string }).txid);
          await until(
            () => ledger.transactions >= 20 && loop.waiting.includes(longTxid as bigint),
            bound(60_000),
            'the relay to wait for the long transaction',
          ).catch(async (error: unknown) => {
            const activity = await pgt.query(
              'SELECT backend_xid::text AS xid, state, wait_event, left(query, 60) AS query ' +
                'FROM pg_stat_activity WHERE datname = current_database()',
            );
            throw new Error(
              `${String(error)}: long txid ${longTxid}, ${ledger.transactions} committed, ` +
                `${published.rows} published, waiting events ${loop.waiting.join(',')}, ` +
                `pool ${pool.totalCount}/${pool.idleCount} idle/${pool.waitingCount} waiting, ` +
                `writers at ${JSON.stringify(ledger.phases)}; ${JSON.stringify(activity)}`,
            );
          });
          await client.query('COMMIT');
          ledger.commit([{ id, key: 'long', body: JSON.stringify('long-0') }]);
        } finally {
          client.release();
        }
      })();

      const bulk = transaction(
        pool,
        table,
        ledger,
        Array.from({ length: 10_000 }, (_, i) => `bulk-${i % 7}`),
        'bulk',
      );

      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let t = 0; t < 25; t++) {
          const size = 1 + Math.floor(next() * 8);
          // Keys in one order in every transaction, as a service that wants no deadlock (each
          // costs deadlock_timeout, 1 s) writes them; shared keys still meet the order check.
          const rowKeys = Array.from(
            { length: size },
            () => keys[Math.floor(next() * keys.length)] as string,
          ).sort();
          const slow = next() < 0.1;
          await transaction(pool, table, ledger, rowKeys, `w${w}-t${t}`, {
            rollback: next() < 0.15,
            rowDelayMs: () => (next() < 0.2 ? Math.floor(next() * 10) : 0),
            commitDelayMs: slow ? 100 + Math.floor(next() * 300) : Math.floor(next() * 15),
          });
        }
      });
      await Promise.all([long, bulk, ...writers]);
      // The relays (restarted on the way) keep going until the stream holds every row.
      await caughtUp(pool, table, stream);
      await loop.stop();

      const last = relayOn(postgres(pool), table, rabbit.rabbit, stream);
      await last.run({ untilCaughtUp: true });
      const backlog = await last.backlog();
      await last.close();
      expect(backlog.rows).toBe(0n);

      const seen = await seenOn(rabbit.rabbit, stream);
      console.log(
        `outbox trap: ${ledger.transactions} transactions committed, ${ledger.rolledBack} rolled back, ` +
          `${ledger.retries} retried, ${seen.length} messages, ${loop.restarts()} restarts, ` +
          `${loop.waiting.length} waiting events`,
      );
      expect(ledger.rolledBack).toBeGreaterThan(0);
      expect(loop.restarts()).toBeGreaterThanOrEqual(3);
      expect(loop.waiting).toContain(longTxid);
      expectExactlyCommitted(seen, ledger.committed);
      expect(ledger.keyOrderViolations(seen)).toEqual([]);
    },
    bound(300_000),
  );

  it(
    'a relay starting while a transaction that wrote the outbox is open neither waits for it nor blocks other writers',
    async () => {
      const stream = await rabbit.newStream('outbox-start');
      const table = 'outbox_start';
      const pool = pgt.pool({ max: 4 });
      await createOutboxTable(postgres(pool), table);
      const open = await pool.connect();
      try {
        await open.query('BEGIN');
        const first = await writeOutbox(open, { key: 'a', json: 'open' }, { table });
        const relay = relayOn(postgres(pool), table, rabbit.rabbit, stream);
        let started = false;
        relay.on('started', () => (started = true));
        const controller = new AbortController();
        const run = relay.run({ signal: controller.signal });
        // Its start used to run CREATE INDEX IF NOT EXISTS: a SHARE lock, waiting for `open`.
        await until(() => started, bound(10_000), 'the relay to start');
        const ledger = new Ledger();
        await transaction(pool, table, ledger, ['b'], 'other');
        expect(ledger.transactions).toBe(1);
        await open.query('COMMIT');
        controller.abort();
        await run;
        await relay.close();
        const last = relayOn(postgres(pool), table, rabbit.rabbit, stream);
        await last.run({ untilCaughtUp: true });
        await last.close();
        expect((await seenOn(rabbit.rabbit, stream)).map((m) => m.id)).toEqual([
          first,
          ...ledger.committed.map((row) => row.id),
        ]);
      } finally {
        await open.query('ROLLBACK').catch(() => undefined);
        open.release();
      }
    },
    bound(60_000),
  );

  it(
    'two relays of one name running at once, over two connections, publish each row once',
    async () => {
      const stream = await rabbit.newStream('outbox-two');
      const table = 'outbox_two';
      const pool = pgt.pool({ max: 8 });
      await createOutboxTable(postgres(pool), table);
      const other = await connect(inject('rabbitmqUrl'));
      try {
        const ledger = new Ledger();
        const published = [{ rows: 0 }, { rows: 0 }];
        const loops = [
          relayLoop(
            () => relayOn(postgres(pool), table, rabbit.rabbit, stream),
            [300],
            published[0] as { rows: number },
          ),
          relayLoop(
            () => relayOn(postgres(pool), table, other, stream),
            [500],
            published[1] as { rows: number },
          ),
        ];
        const next = random(7);
        await Promise.all(
          Array.from({ length: 4 }, async (_, w) => {
            for (let t = 0; t < 30; t++) {
              const rowKeys = Array.from(
                { length: 1 + Math.floor(next() * 20) },
                () => `k${Math.floor(next() * 4)}`,
              ).sort();
              await transaction(pool, table, ledger, rowKeys, `w${w}-t${t}`, {
                rollback: next() < 0.1,
                commitDelayMs: Math.floor(next() * 20),
              });
            }
          }),
        );
        // Both keep going until the stream holds every committed row.
        const total = ledger.committed.length;
        await caughtUp(pool, table, stream);
        await Promise.all(loops.map((loop) => loop.stop()));
        expect(published[0]?.rows).toBeGreaterThan(0);
        expect(published[1]?.rows).toBeGreaterThan(0);
        const seen = await seenOn(rabbit.rabbit, stream);
        expect(seen).toHaveLength(total);
        expectExactlyCommitted(seen, ledger.committed);
        expect(ledger.keyOrderViolations(seen)).toEqual([]);
      } finally {
        await other.close();
      }
    },
    bound(180_000),
  );

  it(
    'the same scripted transactions give the same messages on PGlite + the embedded broker and on PostgreSQL + RabbitMQ',
    async () => {
      const next = random(11);
      const script: { events: OutboxEvent[]; rollback: boolean }[] = [];
      for (let t = 0; t < 40; t++) {
        const events: OutboxEvent[] = [];
        for (let i = 0; i < 1 + Math.floor(next() * 6); i++) {
          const key = `k${Math.floor(next() * 4)}`;
          const eventTime = 1_700_000_000_000 + t * 1_000 + i;
          const headers = next() < 0.5 ? { tenant: `t${t % 3}`, n: String(i) } : undefined;
          const kind = Math.floor(next() * 3);
          events.push(
            kind === 0
              ? { key, eventTime, headers, json: { t, i, s: 'é' } }
              : kind === 1
                ? { key, eventTime, headers, msgpack: { t, i, list: [1, 2, 3] } }
                : {
                    key,
                    eventTime,
                    headers,
                    bytes: Uint8Array.from([t, i, 255]),
                    contentType: 'application/x-raw',
                  },
          );
        }
        script.push({ events, rollback: next() < 0.2 });
      }
      class Rollback extends Error {}

      // Embedded.
      const db = new PGlite();
      const memory = new MemoryBroker();
      memory.createStream('outbox-diff');
      await createOutboxTable(pglite(db), 'outbox_diff');
      for (const { events, rollback } of script) {
        await db
          .transaction(async (tx) => {
            for (const event of events) await writeOutbox(tx, event, { table: 'outbox_diff' });
            if (rollback) throw new Rollback();
          })
          .catch((error: unknown) => {
            if (!(error instanceof Rollback)) throw error;
          });
      }
      const embedded = relayOn(pglite(db), 'outbox_diff', memory, 'outbox-diff');
      await embedded.run({ untilCaughtUp: true });
      await embedded.close();
      await db.close();
      const expected = memory.messages('outbox-diff').map((m) => seenOutboxMessage(m.bytes));

      // Real.
      const stream = await rabbit.newStream('outbox-diff');
      const pool = pgt.pool({ max: 2 });
      await createOutboxTable(postgres(pool), 'outbox_diff');
      for (const { events, rollback } of script) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          for (const event of events) await writeOutbox(client, event, { table: 'outbox_diff' });
          await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
        } finally {
          client.release();
        }
      }
      const real = relayOn(postgres(pool), 'outbox_diff', rabbit.rabbit, stream);
      await real.run({ untilCaughtUp: true });
      await real.close();
      const seen = await seenOn(rabbit.rabbit, stream);

      const comparable = (messages: readonly SeenOutboxMessage[]): unknown[] =>
        messages.map(({ key, headers, contentType, creationTime, body }) => ({
          key,
          headers,
          contentType,
          creationTime,
          body: body.toString('hex'),
        }));
      expect(expected.length).toBe(
        script.filter((t) => !t.rollback).reduce((n, t) => n + t.events.length, 0),
      );
      expect(comparable(seen)).toEqual(comparable(expected));
    },
    bound(120_000),
  );
});
