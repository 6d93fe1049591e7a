// The sink's PostgreSQL adapter (stream-windows/postgres) against the real server: a
// transaction commits or holds nothing; which errors it reports as permanent; close().
import pg from 'pg';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import type { SinkDatabase } from '../../src/database/sink-database.js';
import { postgresForTests } from '../support/brokers/postgres.js';

const db = postgresForTests();

/** The error `promise` rejects with (fails the test when it resolves). */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => expect.fail('resolved; a rejection was expected'),
    (error: unknown) => error as Error & { code?: string },
  );
}

let sink: SinkDatabase;
beforeEach(async () => {
  await db.query('DROP TABLE IF EXISTS totals');
  await db.query(
    'CREATE TABLE totals (customer text PRIMARY KEY, cents bigint NOT NULL CHECK (cents >= 0))',
  );
  sink = postgres(db.pool());
});

const totals = () =>
  db.query<{ customer: string; cents: string }>('SELECT * FROM totals ORDER BY customer');

describe('postgres(): a transaction', () => {
  it('commits every statement of the work, and returns what the work returned', async () => {
    const returned = await sink.transaction(async (tx) => {
      await tx.query('INSERT INTO totals VALUES ($1, $2), ($3, $4)', ['a', 100, 'b', 250]);
      const { rowCount } = await tx.query('UPDATE totals SET cents = cents + 1');
      const { rows } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM totals');
      return { rowCount, n: rows[0]?.n };
    });

    expect(returned).toEqual({ rowCount: 2, n: 2 });
    expect(await totals()).toEqual([
      { customer: 'a', cents: '101' },
      { customer: 'b', cents: '251' },
    ]);
  });

  it('holds nothing of the work when it throws, and rethrows its error', async () => {
    const thrown = new Error('the work failed');

    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query("INSERT INTO totals VALUES ('a', 100)");
        throw thrown;
      }),
    );

    expect(error).toBe(thrown);
    expect(await totals()).toEqual([]);
  });

  it('rejects, holding nothing, when a statement failed and the work caught its error', async () => {
    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query("INSERT INTO totals VALUES ('a', 100)");
        await tx.query("INSERT INTO totals VALUES ('a', 1)").catch(() => undefined);
      }),
    );

    expect(error.message).toBe('Transaction was rolled back instead of committed');
    expect(sink.isRetriable(error)).toBe(false);
    expect(await totals()).toEqual([]);
  });

  it('sends BEGIN in the round trip of a first statement without parameters, which runs inside the transaction', async () => {
    const pool = db.pool({ max: 1 });
    const sent: unknown[] = [];
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          sent.push(args[0]);
          return query(...args);
        },
      });
    });
    const one = postgres(pool);
    // SAVEPOINT fails outside a transaction block (25P01): it ran inside the one BEGIN began.
    await one.transaction(async (tx) => {
      await tx.query('SAVEPOINT first');
      await tx.query('INSERT INTO totals VALUES ($1, 1)', ['a']);
    });
    await one.transaction((tx) => tx.query('INSERT INTO totals VALUES ($1, 2)', ['b']));
    await one.transaction(() => Promise.resolve()); // no statement: no round trip

    expect(sent).toEqual([
      'BEGIN; SAVEPOINT first',
      'INSERT INTO totals VALUES ($1, 1)',
      'COMMIT',
      'BEGIN',
      'INSERT INTO totals VALUES ($1, 2)',
      'COMMIT',
    ]);
    expect(await totals()).toEqual([
      { customer: 'a', cents: '1' },
      { customer: 'b', cents: '2' },
    ]);
  });

  it('gives its client back to the pool, ready for the next one', async () => {
    const pool = db.pool({ max: 1 });
    const one = postgres(pool);
    await rejection(one.transaction(() => Promise.reject(new Error('no'))));
    for (let i = 0; i < 3; i++) {
      await one.transaction((tx) => tx.query('INSERT INTO totals VALUES ($1, 1)', [`c${i}`]));
    }

    expect(pool.totalCount).toBe(1);
    expect(pool.idleCount).toBe(1);
    expect((await totals()).length).toBe(3);
  });
});

describe('postgres(): permanent errors', () => {
  it.each([
    ['a duplicate key', "INSERT INTO totals VALUES ('a', 1), ('a', 2)", '23505'],
    ['a check constraint', "INSERT INTO totals VALUES ('a', -1)", '23514'],
    ['a not-null constraint', "INSERT INTO totals VALUES ('a', NULL)", '23502'],
  ])('reports %s as not retriable, the transaction holding nothing', async (_, sql, code) => {
    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query("INSERT INTO totals VALUES ('z', 1)");
        await tx.query(sql);
      }),
    );

    expect(error.code).toBe(code);
    expect(sink.isRetriable(error)).toBe(false);
    expect(await totals()).toEqual([]);
  });

  it.each([
    ['a missing table', 'INSERT INTO billing VALUES ($1)', ['a'], '42P01'],
    ['a missing column', 'INSERT INTO totals (customer, euros) VALUES ($1, 1)', ['a'], '42703'],
    ['a value of the wrong type', 'INSERT INTO totals VALUES ($1, $2)', ['a', 'ten'], '22P02'],
    ['a text into a bigint', 'INSERT INTO totals VALUES ($1, $1::text)', ['a'], '42804'],
  ])('reports a schema that does not match (%s) as not retriable', async (_, sql, params, code) => {
    const error = await rejection(sink.transaction((tx) => tx.query(sql, params)));

    expect(error.code).toBe(code);
    expect(sink.isRetriable(error)).toBe(false);
    expect(await totals()).toEqual([]);
  });

  it("ends a statement running past the pool's statement_timeout (57014, not retriable), holding nothing", async () => {
    const timed = postgres(db.pool({ statement_timeout: 300 }));
    const started = Date.now();

    const error = await rejection(
      timed.transaction(async (tx) => {
        await tx.query("INSERT INTO totals VALUES ('a', 1)");
        await tx.query('SELECT pg_sleep(30)');
      }),
    );

    expect(error.code).toBe('57014');
    expect(error.message).toContain('statement timeout');
    expect(timed.isRetriable(error)).toBe(false);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await totals()).toEqual([]);
  });
});

describe('postgres(): close()', () => {
  it("leaves a pool given to it open: it is the caller's", async () => {
    const pool = db.pool();
    const given = postgres(pool);
    await given.transaction((tx) => tx.query('SELECT 1'));

    await given.close();

    expect(pool.ended).toBe(false);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('ends the pool it made from a configuration, once however often it is called', async () => {
    const owned = postgres({ connectionString: db.url });
    await owned.transaction((tx) => tx.query("INSERT INTO totals VALUES ('a', 1)"));

    await Promise.all([owned.close(), owned.close()]);
    await owned.close();

    const error = await rejection(owned.transaction((tx) => tx.query('SELECT 1')));
    expect(error.message).toBe('Cannot use a pool after calling end on the pool');
    expect(await totals()).toEqual([{ customer: 'a', cents: '1' }]);
  });
});

describe('postgres(): what it takes', () => {
  it.each([
    ['a URL string', 'postgres://127.0.0.1/db'],
    ['nothing', undefined],
    ['null', null],
  ])('refuses %s with a ConfigError saying what to give', (_, given) => {
    expect(() => postgres(given as unknown as pg.PoolConfig)).toThrow(ConfigError);
    expect(() => postgres(given as unknown as pg.PoolConfig)).toThrow(
      /a pg\.Pool or a pg\.PoolConfig \(a URL as \{ connectionString: url \}\)/,
    );
  });

  it('takes a pool by what it does, not by its class (a pool of another copy of pg)', async () => {
    const pool = db.pool();
    let connects = 0;
    const lookalike = {
      connect: () => {
        connects++;
        return pool.connect();
      },
    } as unknown as pg.Pool;

    await postgres(lookalike).transaction((tx) => tx.query("INSERT INTO totals VALUES ('a', 1)"));

    expect(connects).toBe(1);
    expect(await totals()).toEqual([{ customer: 'a', cents: '1' }]);
  });
});
