import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  readResults,
  sourceMessage,
  type DecodedResult,
  type PackMode,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { databaseSink } from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import { latestState } from '../../../src/sink/latest-state.js';
import { processedIds } from '../../../src/sink/processed-ids.js';
import { windowOutputs } from '../../../src/sink/window-outputs.js';
import {
  brokerWithReadings,
  T0,
  totalOfReadings,
  type Reading,
} from '../../support/jobs/memory-job.js';
import {
  appendJson,
  checkpointOf,
  faultyDatabase,
  rows,
  sqlError,
  pgliteForTests,
} from '../../support/jobs/sink-fixture.js';

const db = pgliteForTests();

let tables = 0;
const fresh = (prefix: string) => `${prefix}_${++tables}`;

const MINUTE = 60_000;
/** Totals per sensor per minute; a reading of minute 0 after minute 1 opened is late. */
const readings: Reading[] = [
  { sensor: 'a', value: 1, t: T0 },
  { sensor: 'b', value: 2, t: T0 + 10 },
  { sensor: 'a', value: 3, t: T0 + MINUTE },
  { sensor: 'a', value: 100, t: T0 + 20 }, // late
  { sensor: 'b', value: 4, t: T0 + MINUTE + 5 },
  { sensor: 'a', value: 5, t: T0 + 2 * MINUTE },
  { sensor: 'b', value: 6, t: T0 + 3 * MINUTE },
];

async function totalsJob(pack: PackMode): Promise<MemoryBroker> {
  const broker = brokerWithReadings(readings, { chunkSize: 2 });
  broker.append('source', [sourceMessage('not json')]); // a dead letter in the open step
  broker.append('source', [jsonMessage(readings[0], { creationTime: T0 + 9 * MINUTE })]);
  await aggregate<Reading>(broker.source('source'))
    .onError('dead-letter')
    .tumbling('1m')
    .key((r) => r.sensor)
    .aggregate(totalOfReadings)
    .to(broker.target('target', { producer: 'totals' }), { pack })
    .run({ untilCaughtUp: true });
  return broker;
}

async function createTotals(): Promise<{ totals: string; late: string; dead: string }> {
  const names = { totals: fresh('totals'), late: fresh('late'), dead: fresh('dead') };
  await db.exec(`
    CREATE TABLE ${names.totals} (key text, window_start timestamptz, window_end timestamptz,
      count integer, total integer, PRIMARY KEY (key, window_start));
    CREATE TABLE ${names.late} (result_offset bigint, position integer, value jsonb);
    CREATE TABLE ${names.dead} (result_offset bigint, source_offset bigint, stage text, error text, message bytea);`);
  return names;
}

describe('windowOutputs', () => {
  for (const pack of ['sections', 'batch', 'single'] as const) {
    it(`upserts a job's outputs by (key, window start), late values and dead letters to their tables ('${pack}')`, async () => {
      const broker = await totalsJob(pack);
      const names = await createTotals();
      const sink = databaseSink({
        name: names.totals,
        source: broker.source('target'),
        database: pglite(db),
        maxBatchMessages: 2,
        into: windowOutputs<{ total: number }>({
          table: names.totals,
          columns: (output) => ({ total: output.value.total }),
          lateTable: names.late,
          deadLetterTable: names.dead,
        }),
      });
      await sink.run({ untilCaughtUp: true });

      const expected = new Map<string, unknown>();
      const late: unknown[] = [];
      let dead = 0;
      for await (const { result } of readResults<{ total: number }>(broker.source('target'), {
        untilCaughtUp: true,
      })) {
        for (const o of result.outputs) {
          expected.set(`${String(o.key)}@${o.start}`, {
            key: String(o.key),
            start: o.start,
            end: o.end,
            count: o.count,
            total: o.value.total,
          });
        }
        late.push(...result.late);
        dead += result.deadLetters.length;
      }
      const table = await rows<{ key: string; s: string; e: string; count: number; total: number }>(
        db,
        `SELECT key, (extract(epoch FROM window_start) * 1000)::bigint::text AS s,
           (extract(epoch FROM window_end) * 1000)::bigint::text AS e, count, total
         FROM ${names.totals} ORDER BY key, window_start`,
      );
      expect(
        table.map((r) => ({
          key: r.key,
          start: Number(r.s),
          end: Number(r.e),
          count: r.count,
          total: r.total,
        })),
      ).toEqual(
        [...expected.values()].sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
      );
      expect(table.length).toBeGreaterThanOrEqual(5);
      const lateRows = await rows<{ value: unknown }>(
        db,
        `SELECT value FROM ${names.late} ORDER BY result_offset, position`,
      );
      expect(lateRows.map((r) => r.value)).toEqual(late);
      expect(late).toHaveLength(1);
      const deadRows = await rows<{ stage: string }>(db, `SELECT stage FROM ${names.dead}`);
      expect(deadRows).toEqual([{ stage: 'decode' }]);
      expect(dead).toBe(1);
    });
  }

  it('stops on a result with late values when no lateTable is given, nothing of its batch applied', async () => {
    const broker = await totalsJob('sections');
    const names = await createTotals();
    const sink = databaseSink({
      name: names.totals,
      source: broker.source('target'),
      database: pglite(db),
      maxBatchMessages: 1,
      into: windowOutputs<{ total: number }>({
        table: names.totals,
        columns: (output) => ({ total: output.value.total }),
        deadLetterTable: names.dead,
      }),
    });
    const error = await sink.run({ untilCaughtUp: true }).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'SinkError',
      stage: 'apply',
      retriable: false,
      stream: 'target',
    });
    expect((error as Error).message).toContain('no lateTable');
    const { firstOffset } = error as { firstOffset: bigint };
    expect(await checkpointOf(db, names.totals, 'target')).toBe(firstOffset - 1n);
  });

  it('stops on a table that does not match (a column missing), not retried, nothing applied', async () => {
    const broker = await totalsJob('sections');
    const table = fresh('no_total');
    await db.exec(
      `CREATE TABLE ${table} (key text, window_start timestamptz, window_end timestamptz, ` +
        'count integer, PRIMARY KEY (key, window_start))',
    );
    const sink = databaseSink({
      name: table,
      source: broker.source('target'),
      database: pglite(db),
      into: windowOutputs<{ total: number }>({
        table,
        columns: (output) => ({ total: output.value.total }),
      }),
    });
    const retries: unknown[] = [];
    sink.on('retry', (event) => retries.push(event));
    await expect(sink.run({ untilCaughtUp: true })).rejects.toMatchObject({
      name: 'SinkError',
      stage: 'apply',
      retriable: false,
      firstOffset: 0n,
      cause: { code: '42703' }, // undefined_column
    });
    expect(retries).toEqual([]);
    expect(await rows(db, `SELECT * FROM ${table}`)).toEqual([]);
    expect(await checkpointOf(db, table, 'target')).toBe(-1n);
  });

  it("reads a job's results with eachBatch's decode: 'result'", async () => {
    const broker = await totalsJob('batch');
    const seen: string[] = [];
    await databaseSink({
      name: fresh('each_result'),
      source: broker.source('target'),
      database: pglite(db),
      into: eachBatch<DecodedResult<{ total: number }>>({
        decode: 'result',
        apply: (_tx, batch) => {
          for (const m of batch.messages) {
            for (const o of m.value.outputs) seen.push(`${String(o.key)}:${o.value.total}`);
          }
          return Promise.resolve();
        },
      }),
    }).run({ untilCaughtUp: true });
    expect(seen.sort()).toEqual(['a:1', 'a:3', 'a:5', 'b:2', 'b:4', 'b:6'].sort());
  });

  it("stops on a flushed window's continuation, which an upsert would overwrite the flushed part with", async () => {
    const broker = brokerWithReadings(readings.slice(0, 2));
    const job = () =>
      aggregate<Reading>(broker.source('source'))
        .tumbling('1m')
        .key((r) => r.sensor)
        .reduce((sum, r) => sum + r.value, 0)
        .to(broker.target('target', { producer: 'flushing' }), { flush: { caughtUp: true } });
    await job().run({ untilCaughtUp: true }); // publishes minute 0, flushed
    broker.append('source', [jsonMessage(readings[1], { creationTime: T0 + 20 })]);
    broker.append('source', [jsonMessage(readings[2], { creationTime: T0 + MINUTE })]);
    await job().run({ untilCaughtUp: true }); // minute 0 again, continues; minute 1 flushed
    const names = await createTotals();
    await db.exec(`ALTER TABLE ${names.totals} RENAME COLUMN total TO value`);
    const error = await databaseSink({
      name: names.totals,
      source: broker.source('target'),
      database: pglite(db),
      maxBatchMessages: 1,
      into: windowOutputs({ table: names.totals }),
    })
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SinkError', stage: 'apply', firstOffset: 1n });
    expect(String(error)).toContain('key b continues a flushed window');
    expect(await rows(db, `SELECT key, value FROM ${names.totals} ORDER BY key`)).toEqual([
      { key: 'a', value: 1 },
      { key: 'b', value: 2 },
    ]);
  });

  it("stops, naming the cause, when a job's results are read one value per message", async () => {
    const broker = await totalsJob('sections');
    const error = await databaseSink({
      name: fresh('one_value'),
      source: broker.source('target'),
      database: pglite(db),
      into: eachBatch({ apply: () => Promise.resolve() }),
    })
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'SinkError',
      stage: 'decode',
      firstOffset: 0n,
      lastOffset: 0n,
      cause: { name: 'MultiSectionMessageError' },
    });
  });

  it('refuses a table name it cannot quote, naming the option', () => {
    expect(() => windowOutputs({ table: '' })).toThrow(/^table must be a non-empty string/);
    expect(() => windowOutputs({ table: 't', lateTable: 'a.b.c' })).toThrow(/^lateTable must be/);
  });
});

describe('latestState', () => {
  /** Entity states, two of them out of order: a's version 1 after its version 3. */
  const states = [
    { id: 'a', version: 2, s: 'a2' },
    { id: 'b', version: 1, s: 'b1' },
    { id: 'a', version: 3, s: 'a3' },
    { id: 'a', version: 1, s: 'a1' },
    { id: 'b', version: 2, s: 'b2' },
    { id: 'c', version: 5, s: 'c5' },
    { id: 'c', version: 4, s: 'c4' },
  ];

  for (const perTransaction of [1, 3, 100]) {
    it(`keeps each entity's highest version, whatever the order (${perTransaction} per transaction)`, async () => {
      const broker = new MemoryBroker();
      broker.createStream('changes');
      broker.createStream('compacted');
      appendJson(broker, 'changes', states, 2);
      await aggregate<(typeof states)[number]>(broker.source('changes'))
        .compact((v) => v.id, { count: 1 })
        .to(broker.target('compacted', { producer: 'compactor' }))
        .run({ untilCaughtUp: true });
      const table = fresh('entities');
      await db.exec(
        `CREATE TABLE ${table} (id text PRIMARY KEY, version integer NOT NULL, state text)`,
      );
      await databaseSink({
        name: table,
        source: broker.source('compacted'),
        database: pglite(db),
        maxBatchMessages: perTransaction,
        into: latestState<(typeof states)[number]>({
          table,
          key: 'id',
          version: 'version',
          row: (output) => ({
            id: output.value.id,
            version: output.value.version,
            state: output.value.s,
          }),
        }),
      }).run({ untilCaughtUp: true });
      expect(await rows(db, `SELECT id, version, state FROM ${table} ORDER BY id`)).toEqual([
        { id: 'a', version: 3, state: 'a3' },
        { id: 'b', version: 2, state: 'b2' },
        { id: 'c', version: 5, state: 'c5' },
      ]);
    });
  }
});

describe('processedIds', () => {
  it('applies each business id once, across batches and a crash after a commit', async () => {
    const payments = ['p1', 'p2', 'p1', 'p3', 'p2', 'p4', 'p3', 'p5'].map((id, i) => ({
      id,
      amount: i + 1,
    }));
    const broker = new MemoryBroker();
    broker.createStream('payments');
    appendJson(broker, 'payments', payments, 3);
    const table = fresh('payments');
    await db.exec(`CREATE TABLE ${table} (id text, amount integer, message_offset bigint)`);
    const sink = (database = pglite(db)) =>
      databaseSink({
        name: table,
        source: broker.source('payments'),
        database,
        maxBatchMessages: 3,
        into: processedIds<{ id: string; amount: number }>({
          table: `${table}_ids`,
          id: (payment) => payment.id,
          apply: async (tx, batch) => {
            for (const m of batch.messages) {
              await tx.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, [
                m.value.id,
                m.value.amount,
                m.offset.toString(),
              ]);
            }
          },
        }),
      });
    const crash = sqlError('XX000', 'crash after the commit');
    await expect(
      sink(faultyDatabase(db, (n) => (n === 2 ? { when: 'after', error: crash } : undefined))).run({
        untilCaughtUp: true,
      }),
    ).rejects.toThrow('crash after the commit');
    await sink().run({ untilCaughtUp: true });
    expect(
      await rows(
        db,
        `SELECT id, amount, message_offset::text AS o FROM ${table} ORDER BY message_offset`,
      ),
    ).toEqual([
      { id: 'p1', amount: 1, o: '0' },
      { id: 'p2', amount: 2, o: '1' },
      { id: 'p3', amount: 4, o: '3' },
      { id: 'p4', amount: 6, o: '5' },
      { id: 'p5', amount: 8, o: '7' },
    ]);
  });

  it("hands apply a batch of the new ids' first messages only, its offsets theirs, and no batch when none is new", async () => {
    const broker = new MemoryBroker();
    broker.createStream('payments');
    // Batches of 3: {a, b, a}, {a, c, b} (only c is new), {b, a, c} (nothing new).
    const ids = ['a', 'b', 'a', 'a', 'c', 'b', 'b', 'a', 'c'];
    appendJson(
      broker,
      'payments',
      ids.map((id) => ({ id })),
      3,
    );
    const table = fresh('payments');
    const seen: [bigint, bigint, bigint[]][] = [];
    await databaseSink({
      name: table,
      source: broker.source('payments'),
      database: pglite(db),
      maxBatchMessages: 3,
      into: processedIds<{ id: string }>({
        table: `${table}_ids`,
        id: (payment) => payment.id,
        apply: (_tx, batch) => {
          seen.push([batch.firstOffset, batch.lastOffset, batch.messages.map((m) => m.offset)]);
          return Promise.resolve();
        },
      }),
    }).run({ untilCaughtUp: true });
    expect(seen).toEqual([
      [0n, 1n, [0n, 1n]],
      [4n, 4n, [4n]],
    ]);
    expect(await checkpointOf(db, table, 'payments')).toBe(8n);
  });

  it('stops on an id that is not a string, naming its offset, nothing of its batch applied', async () => {
    const broker = new MemoryBroker();
    broker.createStream('payments');
    appendJson(broker, 'payments', [{ id: 'a' }, { id: 7 }], 1);
    const table = fresh('payments');
    const applied: bigint[] = [];
    const run = databaseSink({
      name: table,
      source: broker.source('payments'),
      database: pglite(db),
      maxBatchMessages: 1,
      into: processedIds<{ id: string }>({
        table: `${table}_ids`,
        id: (payment) => payment.id,
        apply: (_tx, batch) => {
          applied.push(...batch.messages.map((m) => m.offset));
          return Promise.resolve();
        },
      }),
    }).run({ untilCaughtUp: true });
    await expect(run).rejects.toMatchObject({
      name: 'SinkError',
      stream: 'payments',
      firstOffset: 1n,
      lastOffset: 1n,
      stage: 'apply',
      retriable: false,
      cause: { message: 'the id of the message at offset 1 is not a string' },
    });
    expect(applied).toEqual([0n]);
    expect(await checkpointOf(db, table, 'payments')).toBe(0n);
  });
});

describe('a super stream', () => {
  it('keeps one checkpoint per partition and applies every message once', async () => {
    const broker = new MemoryBroker();
    const partitions = broker.createSuperStream('orders', { partitions: 3 });
    const table = fresh('orders');
    await db.exec(`CREATE TABLE ${table} (stream text, message_offset bigint, v integer)`);
    partitions.forEach((p, i) =>
      appendJson(
        broker,
        p,
        Array.from({ length: 4 + i }, (_, v) => ({ v })),
        2,
      ),
    );
    const sink = databaseSink<{ v: number }>({
      name: table,
      source: broker.superStreamSource('orders'),
      database: pglite(db),
      maxBatchMessages: 3,
      into: eachBatch<{ v: number }>({
        apply: async (tx, batch) => {
          for (const m of batch.messages) {
            await tx.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, [
              batch.stream,
              m.offset.toString(),
              m.value.v,
            ]);
          }
        },
      }),
    });
    expect((await sink.run({ untilCaughtUp: true })).applied).toBe(4 + 5 + 6);

    for (const [i, p] of partitions.entries()) {
      expect(await checkpointOf(db, table, p)).toBe(BigInt(3 + i));
      expect(
        await rows(db, `SELECT count(*)::int AS n FROM ${table} WHERE stream = '${p}'`),
      ).toEqual([{ n: 4 + i }]);
    }
    // A message one partition cannot apply stops every partition's loop, naming its stream.
    appendJson(broker, partitions[1] as string, [{ v: 'not a number' }]);
    partitions.forEach((p) => appendJson(broker, p, [{ v: 100 }]));
    const error = await sink.run().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SinkError', stream: partitions[1], firstOffset: 5n });
  });
});
