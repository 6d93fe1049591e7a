// An outbox relay behind a transaction that holds a gap open for a full minute, on PostgreSQL
// and RabbitMQ, while writers keep committing: the relay publishes nothing past the gap, its
// metrics show the wait and the lag (rows held back, the age of the oldest) growing through the
// minute, and once the transaction commits every row is published once, in commit order, the
// held-back transaction's row first.
import type pg from 'pg';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createOutboxTable, outboxRelay, writeOutbox } from '../../src/index.js';
import { relayMetrics } from '../../src/metrics/index.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import {
  expectExactlyCommitted,
  relaySeries,
  seenOutboxMessage,
  until,
  type CommittedRow,
} from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';

const rabbit = rabbitForTests();
const pgt = postgresForTests();

/** How long the gap stays open: the minute, not scaled (it is what is tested). */
const GAP_MS = 60_000;
/** Between two samples of the relay's metrics while it waits. */
const SAMPLE_MS = 5_000;
const TABLE = 'minute_gap_outbox';

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Commits one transaction of `keys`' rows on `pool`; resolves with its rows. */
async function commit(pool: pg.Pool, keys: readonly string[], label: string) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const rows: CommittedRow[] = [];
    for (const [i, key] of keys.entries()) {
      const body = `${label}-${i}`;
      const id = await writeOutbox(client, { key, json: body }, { table: TABLE });
      rows.push({ id, key, body: JSON.stringify(body) });
    }
    await client.query('COMMIT');
    return rows;
  } finally {
    client.release();
  }
}

/** One look at the relay while it waits. */
interface Sample {
  readonly atMs: number;
  readonly committedHeld: number;
  readonly published: number;
  readonly backlogRows: number;
  readonly oldestAgeSeconds: number;
  readonly waitSeconds: number;
}

describe('an outbox relay behind a transaction open for a minute', () => {
  it(
    'waits, shows the rows held back and their age growing as lag, and then publishes every row once in commit order',
    async () => {
      const pool = pgt.pool({ max: 4 });
      const stream = await rabbit.newStream('minute-gap');
      await createOutboxTable(postgres(pool), TABLE);
      const committed: CommittedRow[] = [];
      committed.push(...(await commit(pool, ['before'], 'before')));

      const relay = outboxRelay({
        name: 'minute',
        database: postgres(pool),
        table: TABLE,
        broker: rabbit.rabbit,
        to: stream,
        pollIntervalMs: 50,
      });
      const registry = new Registry();
      const metrics = relayMetrics(relay, { registry, backlogTimeoutMs: bound(10_000) });
      let published = 0;
      const waitingFor: bigint[] = [];
      relay.on('published', (event) => (published += event.rows));
      relay.on('waiting', (event) => waitingFor.push(event.openTransaction));
      const stop = new AbortController();
      const run = relay.run({ signal: stop.signal });

      await until(() => published === 1, bound(30_000), 'the first row published');
      // The gap: an older transaction with a row, open while younger ones commit.
      const open = await pool.connect();
      await open.query('BEGIN');
      const heldId = await writeOutbox(open, { key: 'held', json: 'held' }, { table: TABLE });
      const { rows } = await open.query<{ txid: string }>(
        'SELECT pg_current_xact_id()::text AS txid',
      );
      const openTxid = BigInt((rows[0] as { txid: string }).txid);
      const samples: Sample[] = [];
      try {
        const openedAt = performance.now();

        // Writers commit a transaction every ~100 ms for the minute; a sampler reads the metrics.
        const held: CommittedRow[] = [];
        const writer = (async () => {
          for (let t = 0; performance.now() - openedAt < GAP_MS; t++) {
            held.push(...(await commit(pool, [`k${t % 5}`, `k${(t + 1) % 5}`], `t${t}`)));
            await pause(100);
          }
        })();
        while (performance.now() - openedAt < GAP_MS) {
          await pause(Math.min(SAMPLE_MS, Math.max(0, GAP_MS - (performance.now() - openedAt))));
          const committedHeld = held.length;
          samples.push({
            atMs: performance.now() - openedAt,
            committedHeld,
            published,
            backlogRows: await relaySeries(registry, 'backlog_rows', 'minute'),
            oldestAgeSeconds: await relaySeries(registry, 'backlog_oldest_age_seconds', 'minute'),
            waitSeconds: await relaySeries(registry, 'wait_seconds_total', 'minute'),
          });
        }
        await writer;
        committed.push(...held);
        console.log(
          `minute gap: ${held.length} rows held back; samples ${JSON.stringify(samples)}`,
        );
      } finally {
        await open.query('COMMIT');
        open.release();
      }
      committed.push({ id: heldId, key: 'held', body: JSON.stringify('held') });
      await until(() => published === committed.length, bound(60_000), 'every row published');
      const after = {
        backlogRows: await relaySeries(registry, 'backlog_rows', 'minute'),
        oldestAgeSeconds: await relaySeries(registry, 'backlog_oldest_age_seconds', 'minute'),
      };
      stop.abort();
      await run;
      metrics.close();
      await relay.close();

      // Waiting the whole minute, for that transaction, with nothing past it published.
      expect(waitingFor).toContain(openTxid);
      expect(samples.length).toBeGreaterThanOrEqual(GAP_MS / SAMPLE_MS - 1);
      for (const sample of samples) {
        expect(sample.published, JSON.stringify(sample)).toBe(1);
        // Rows committed by then and not on the stream: at least those counted before the
        // scrape (more may commit during it).
        expect(sample.backlogRows, JSON.stringify(sample)).toBeGreaterThanOrEqual(
          sample.committedHeld,
        );
      }
      const last = samples[samples.length - 1] as Sample;
      expect(last.committedHeld).toBeGreaterThan(100);
      // The oldest held-back row's age and the wait's time grow through the minute.
      expect(last.oldestAgeSeconds).toBeGreaterThanOrEqual((GAP_MS - 2 * SAMPLE_MS) / 1000);
      expect(last.waitSeconds).toBeGreaterThanOrEqual((GAP_MS - 2 * SAMPLE_MS) / 1000);
      for (let i = 1; i < samples.length; i++) {
        const [a, b] = [samples[i - 1] as Sample, samples[i] as Sample];
        expect(b.backlogRows, JSON.stringify([a, b])).toBeGreaterThan(a.backlogRows);
        expect(b.oldestAgeSeconds, JSON.stringify([a, b])).toBeGreaterThan(a.oldestAgeSeconds);
      }
      // Lag gone once the gap closed; the stream holds each committed row once, in commit order.
      expect(after).toEqual({ backlogRows: 0, oldestAgeSeconds: 0 });
      const seen = (await readAll(rabbit.rabbit, stream)).map((bytes) => seenOutboxMessage(bytes));
      expect(seen[1]?.key).toBe('held');
      expectExactlyCommitted(seen, committed);
    },
    bound(GAP_MS + 120_000),
  );
});
