// What stops a database sink and what it dead-letters or retries: errors tied to one message,
// errors of every message alike, statement cancellations, retries running out, tables that
// cannot be created, and a job's results read as plain values.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ResultMessageError, SinkError, SourceError } from '../../../src/common/errors.js';
import { aggregate } from '../../../src/index.js';
import type { Source, SourceChunk } from '../../../src/ports/ports.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { databaseSink } from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import { windowOutputs } from '../../../src/sink/window-outputs.js';
import { brokerWithReadings, T0, type Reading } from '../../support/jobs/memory-job.js';
import {
  appendJson,
  checkpointOf,
  rows,
  sqlError,
  startPglite,
} from '../../support/jobs/sink-fixture.js';
import { bound } from '../../support/timing.js';

let db: PGlite;
beforeAll(async () => {
  db = await startPglite();
}, bound(60_000));
afterAll(async () => {
  await db.close();
});

let names = 0;
const fresh = (prefix: string) => `${prefix}_${++names}`;

function brokerWith(count: number): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('in');
  appendJson(
    broker,
    'in',
    Array.from({ length: count }, (_, v) => ({ v })),
  );
  return broker;
}

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<SinkError> {
  return promise.then(
    () => expect.fail('resolved; a rejection was expected'),
    (error: unknown) => {
      expect(error).toBeInstanceOf(SinkError);
      return error as SinkError;
    },
  );
}

describe('databaseSink: dead letters are messages the database refused for their data', () => {
  it('stops on a missing table instead of dead-lettering every message', async () => {
    const name = fresh('missing');
    const sink = databaseSink<{ v: number }>({
      name,
      source: brokerWith(20).source('in'),
      database: pglite(db),
      maxBatchDelayMs: 0,
      onError: { deadLetterTable: `${name}_dead` },
      into: eachBatch({
        apply: async (tx, batch) => {
          for (const m of batch.messages) {
            await tx.query('INSERT INTO missing_table VALUES ($1)', [m.value.v]);
          }
        },
      }),
    });
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'apply', retriable: false, firstOffset: 0n });
    expect((error.cause as { code?: string }).code).toBe('42P01');
    expect(await rows(db, `SELECT * FROM ${name}_dead`)).toEqual([]);
    expect(await checkpointOf(db, name, 'in')).toBe(-1n);
  });

  it('stops on an error without a SQLSTATE, nothing dead-lettered', async () => {
    const name = fresh('nocode');
    const sink = databaseSink({
      name,
      source: brokerWith(3).source('in'),
      database: pglite(db),
      maxBatchDelayMs: 0,
      onError: { deadLetterTable: `${name}_dead` },
      into: eachBatch({
        apply: () => Promise.reject(new Error('Query read timeout')),
      }),
    });
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'apply', retriable: false });
    expect(await rows(db, `SELECT * FROM ${name}_dead`)).toEqual([]);
  });

  it('dead-letters a message a constraint refuses, also alone in its batch', async () => {
    const name = fresh('constraint');
    await db.exec(`CREATE TABLE ${name} (v integer NOT NULL CHECK (v <> 1))`);
    const sink = databaseSink<{ v: number }>({
      name,
      source: brokerWith(3).source('in'),
      database: pglite(db),
      maxBatchMessages: 1,
      maxBatchDelayMs: 0,
      onError: { deadLetterTable: `${name}_dead` },
      into: eachBatch({
        apply: async (tx, batch) => {
          for (const m of batch.messages) {
            await tx.query(`INSERT INTO ${name} VALUES ($1)`, [m.value.v]);
          }
        },
      }),
    });
    expect(await sink.run({ untilCaughtUp: true })).toMatchObject({
      applied: 2,
      deadLettered: 1,
    });
    expect(await rows(db, `SELECT "offset"::text AS o, stage FROM ${name}_dead`)).toEqual([
      { o: '1', stage: 'apply' },
    ]);
    expect(await rows(db, `SELECT v FROM ${name} ORDER BY v`)).toEqual([{ v: 0 }, { v: 2 }]);
  });
});

describe('databaseSink: a cancelled statement (57014)', () => {
  const cancelled = (name: string, transactionTimeoutMs?: number) =>
    databaseSink({
      name,
      source: brokerWith(1).source('in'),
      database: pglite(db),
      maxBatchDelayMs: 0,
      maxRetries: 2,
      retryDelayMs: 1,
      ...(transactionTimeoutMs === undefined ? {} : { transactionTimeoutMs }),
      into: eachBatch({ apply: () => Promise.reject(sqlError('57014', 'canceling statement')) }),
    });

  it("is permanent without the sink's transactionTimeoutMs: the pool's statement_timeout", async () => {
    const sink = cancelled(fresh('pool_timeout'));
    const retries: unknown[] = [];
    sink.on('retry', (event) => retries.push(event));
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'apply', retriable: false });
    expect(retries).toEqual([]);
  });

  it("is retried as a timeout under the sink's transactionTimeoutMs", async () => {
    const error = await rejection(cancelled(fresh('own_timeout'), 60_000).run());
    expect(error).toMatchObject({ stage: 'retries', retriable: false });
    expect(error.cause).toMatchObject({ stage: 'timeout', retriable: true });
  });
});

describe('databaseSink: errors outside a batch', () => {
  it('ends maxRetries after a source error with a SinkError at stage retries', async () => {
    const failing: Source = {
      stream: 'flaky',
      // A read that fails at its first pull.
      // eslint-disable-next-line require-yield, @typescript-eslint/require-await
      async *read(): AsyncIterable<SourceChunk> {
        throw new SourceError('flaky', true, 'connection lost', 0n);
      },
      endOffset: () => Promise.resolve(5n),
    };
    const sink = databaseSink({
      name: fresh('source_retries'),
      source: failing,
      database: pglite(db),
      maxRetries: 2,
      retryDelayMs: 1,
      into: eachBatch({ apply: () => Promise.resolve() }),
    });
    const error = await rejection(sink.run());
    expect(error).toMatchObject({ stage: 'retries', stream: 'flaky', firstOffset: 0n });
    expect(error.cause).toBeInstanceOf(SourceError);
  });

  it('names the stream when its tables cannot be created (stage prepare)', async () => {
    const sink = databaseSink({
      name: fresh('prepare'),
      source: brokerWith(1).source('in'),
      database: pglite(db),
      into: {
        ...eachBatch({ apply: () => Promise.resolve() }),
        prepare: () => Promise.reject(sqlError('42501', 'permission denied for schema public')),
      },
    });
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'prepare', stream: 'in', retriable: false });
    expect(error.message).toContain("stream 'in'");
  });
});

describe("databaseSink: a job's results", () => {
  const readings: Reading[] = [
    { sensor: 'a', value: 1, t: T0 },
    { sensor: 'b', value: 2, t: T0 + 10 },
    { sensor: 'a', value: 3, t: T0 + 60_000 },
  ];

  it("read with decode 'json' stop with a ResultMessageError pointing to decode 'result'", async () => {
    const broker = brokerWithReadings(readings);
    await aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .reduce((sum, r) => sum + r.value, 0)
      .to(broker.target('target', { producer: 'sums' }))
      .run({ untilCaughtUp: true });
    const sink = databaseSink({
      name: fresh('as_json'),
      source: broker.source('target'),
      database: pglite(db),
      into: eachBatch({ apply: () => Promise.resolve() }),
    });
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'decode', firstOffset: 0n });
    expect(error.cause).toBeInstanceOf(ResultMessageError);
    expect((error.cause as Error).message).toContain("decode: 'result'");
  });

  it('windowOutputs refuses keys of two types that would share a row (1 and "1")', async () => {
    const broker = brokerWithReadings(readings);
    await aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .key((r) => (r.sensor === 'a' ? 1 : '1'))
      .reduce((sum, r) => sum + r.value, 0)
      .to(broker.target('target', { producer: 'sums' }))
      .run({ untilCaughtUp: true });
    const table = fresh('mixed_keys');
    await db.exec(`CREATE TABLE ${table} (key text, window_start timestamptz,
      window_end timestamptz, count integer, value integer, PRIMARY KEY (key, window_start))`);
    const sink = databaseSink({
      name: table,
      source: broker.source('target'),
      database: pglite(db),
      into: windowOutputs({ table }),
    });
    const error = await rejection(sink.run({ untilCaughtUp: true }));
    expect(error).toMatchObject({ stage: 'apply', retriable: false });
    expect((error.cause as Error).message).toMatch(/type (number|string)/);
    expect(await rows(db, `SELECT * FROM ${table}`)).toEqual([]);
  });
});
