// The database sink over RabbitMQ into the real PostgreSQL when the database fails: its
// sessions ended again and again while it runs (retried from the checkpoint, the table exact
// in the end), a row the table refuses, and a transaction that outlives its bound (a typed
// error naming stream and offsets, nothing of the batch applied, nothing skipped).
import { beforeEach, describe, expect, it } from 'vitest';
import { databaseSink, eachBatch, jsonMessage, SinkError } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import type { SinkTransaction } from '../../src/database/sink-database.js';
import type { SinkBatch } from '../../src/sink/sink-shape.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const db = postgresForTests();

interface Usage {
  readonly customer: number;
  readonly cents: number;
}

beforeEach(async () => {
  await db.query('DROP TABLE IF EXISTS totals, seen, stream_windows_checkpoints');
  await db.query(
    'CREATE TABLE totals (customer int PRIMARY KEY, cents bigint NOT NULL CHECK (cents >= 0))',
  );
  await db.query('CREATE TABLE seen (message_offset bigint NOT NULL)');
});

/** Adds each message's cents to its customer's total, and lists its offset in `seen`. */
async function addUp(tx: SinkTransaction, batch: SinkBatch<Usage>): Promise<void> {
  for (const { offset, value } of batch.messages) {
    await tx.query('INSERT INTO seen VALUES ($1)', [offset.toString()]);
    await tx.query(
      'INSERT INTO totals VALUES ($1, $2) ON CONFLICT (customer) DO UPDATE ' +
        'SET cents = totals.cents + excluded.cents',
      [value.customer, value.cents],
    );
  }
}

async function streamOf(usages: readonly Usage[]): Promise<string> {
  const stream = await real.newStream('sink-pg-faults');
  await publishAll(
    real.rabbit,
    stream,
    usages.map((usage) => jsonMessage(usage)),
  );
  return stream;
}

const seen = async () =>
  (
    await db.query<{ o: string }>(
      'SELECT message_offset::text AS o FROM seen ORDER BY message_offset',
    )
  ).map((row) => Number(row.o));

describe('a database sink into PostgreSQL', () => {
  it(
    'applies every message once while its sessions are ended again and again',
    async () => {
      const usages = Array.from({ length: 2_000 }, (_, i) => ({ customer: i % 7, cents: i % 100 }));
      const stream = await streamOf(usages);
      const sink = databaseSink({
        name: 'terminated',
        source: real.rabbit.source(stream),
        database: postgres({ connectionString: db.url }),
        into: eachBatch<Usage>({ apply: addUp }),
        maxBatchMessages: 50,
        retryDelayMs: 10,
        maxRetryDelayMs: 200,
      });
      const retried: Error[] = [];
      sink.on('retry', ({ error }) => retried.push(error));
      let terminated = 0;
      let running = true;
      // 40 rounds, 150 ms apart: then the sink finishes undisturbed, however slow the machine
      // (a transaction slower than the interval would otherwise never commit).
      const terminating = (async () => {
        // The sink's finally sets it, which TypeScript cannot see.
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
        for (let round = 0; round < 40 && running; round++) {
          await new Promise((resolve) => setTimeout(resolve, 150));
          const rows = await db.query<{ ended: boolean }>(
            'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity ' +
              'WHERE datname = current_database() AND pid <> pg_backend_pid()',
          );
          terminated += rows.filter((row) => row.ended).length;
        }
      })();

      const summary = await sink.run({ untilCaughtUp: true }).finally(() => (running = false));
      await terminating;
      await sink.close();

      console.log(
        `sink under pg_terminate_backend: ${terminated} sessions ended, ${retried.length} retries, ` +
          `${summary.transactions} transactions`,
      );
      expect(terminated).toBeGreaterThan(0);
      expect(retried.length).toBeGreaterThan(0);
      expect(await seen()).toEqual(usages.map((_, offset) => offset));
      const expected = new Map<number, number>();
      for (const { customer, cents } of usages) {
        expected.set(customer, (expected.get(customer) ?? 0) + cents);
      }
      expect(await db.query('SELECT customer, cents::int FROM totals ORDER BY customer')).toEqual(
        [...expected].sort(([a], [b]) => a - b).map(([customer, cents]) => ({ customer, cents })),
      );
    },
    bound(300_000),
  );

  it(
    'stops at a row the table refuses, naming stream and offsets, with what came before applied and nothing of its batch',
    async () => {
      const usages = Array.from({ length: 20 }, (_, i) => ({
        customer: 1,
        cents: i === 13 ? -1_000 : 10,
      }));
      const stream = await streamOf(usages);
      const sink = databaseSink({
        name: 'refused',
        source: real.rabbit.source(stream),
        database: postgres({ connectionString: db.url }),
        into: eachBatch<Usage>({ apply: addUp }),
        maxBatchMessages: 5,
      });

      const error = await sink.run({ untilCaughtUp: true }).then(
        () => expect.fail('the sink applied a row the table refuses'),
        (thrown: unknown) => thrown,
      );
      await sink.close();

      // Batches follow the stream's chunks as well as the count: the refused row's batch ends
      // at most 5 messages from where it starts.
      expect(error).toBeInstanceOf(SinkError);
      const { firstOffset, lastOffset } = error as SinkError;
      expect(firstOffset <= 13n && 13n <= lastOffset && lastOffset - firstOffset < 5n).toBe(true);
      expect(error).toMatchObject({
        stream,
        stage: 'apply',
        retriable: false,
        cause: expect.objectContaining({ code: '23514' }),
      });
      const where =
        firstOffset === lastOffset
          ? `the message at offset ${firstOffset}`
          : `offsets ${firstOffset}..${lastOffset}`;
      expect((error as Error).message).toContain(`${where} of stream '${stream}'`);
      const before = Number(firstOffset);
      expect(await seen()).toEqual(Array.from({ length: before }, (_, offset) => offset));
      expect(await db.query('SELECT cents::int FROM totals')).toEqual(
        before === 0 ? [] : [{ cents: 10 * before }],
      );
    },
    bound(120_000),
  );

  it(
    'rolls back a transaction that outlives transactionTimeoutMs, retries it, and stops after maxRetries',
    async () => {
      const stream = await streamOf([{ customer: 1, cents: 10 }]);
      const sink = databaseSink({
        name: 'slow',
        source: real.rabbit.source(stream),
        database: postgres({ connectionString: db.url }),
        into: eachBatch<Usage>({
          apply: async (tx, batch) => {
            await addUp(tx, batch);
            await tx.query('SELECT pg_sleep(30)');
          },
        }),
        transactionTimeoutMs: 500,
        retryDelayMs: 10,
        maxRetries: 1,
      });
      const started = Date.now();

      const error = await sink.run({ untilCaughtUp: true }).then(
        () => expect.fail('the sink applied a batch past its bound'),
        (thrown: unknown) => thrown,
      );
      await sink.close();

      expect(error).toMatchObject({
        stream,
        firstOffset: 0n,
        lastOffset: 0n,
        stage: 'retries',
        retriable: false,
        cause: expect.objectContaining({ stage: 'timeout', retriable: true }),
      });
      expect(Date.now() - started).toBeLessThan(25_000);
      expect(await seen()).toEqual([]);
      expect(
        await db.query(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = $1',
          ['active'],
        ),
      ).toEqual([{ n: 1 }]);
    },
    bound(120_000),
  );
});
