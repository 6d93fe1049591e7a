// The sink's PostgreSQL adapter when the connection goes: a session ended by the server
// mid-transaction (pg_terminate_backend from another connection), a server that refuses or
// does not answer, a pool with no free client. Each is retriable, and nothing of the
// transaction holds. (test/integration/postgres-restart.test.ts stops the server itself.)
import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { beforeEach, describe, expect, it } from 'vitest';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { freePort } from '../support/brokers/tcp-proxy.js';

const db = postgresForTests();

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => expect.fail('resolved; a rejection was expected'),
    (error: unknown) => error as Error & { code?: string },
  );
}

beforeEach(async () => {
  await db.query('DROP TABLE IF EXISTS applied');
  await db.query('CREATE TABLE applied (n int PRIMARY KEY)');
});

const applied = async () =>
  (await db.query<{ n: number }>('SELECT n FROM applied ORDER BY n')).map((row) => row.n);

/** Ends the session `pid` from another connection, and waits until the server let it go. */
async function terminate(pid: number): Promise<void> {
  await db.query('SELECT pg_terminate_backend($1, 10000)', [pid]);
}

async function backendPid(tx: {
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its rows' type, as pg's query<R>
  query<R>(sql: string): Promise<{ rows: readonly R[] }>;
}): Promise<number> {
  const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return rows[0]?.pid ?? expect.fail('no backend pid');
}

/** Lets the client see the connection close (its socket's end event). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

describe('postgres(): a session ended mid-transaction', () => {
  it('is retriable when the session ends between two statements, nothing of it holds, and the broken client is dropped', async () => {
    const pool = db.pool({ max: 1 });
    const sink = postgres(pool);
    let firstPid = 0;

    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query('INSERT INTO applied VALUES (1)');
        firstPid = await backendPid(tx);
        await terminate(firstPid);
        // The client sees the connection close while no statement of it runs: the 'error'
        // of a checked-out client, which would end the process if nobody listened.
        await settle();
        await tx.query('INSERT INTO applied VALUES (2)');
      }),
    );

    expect(error.message).toBe('Client has encountered a connection error and is not queryable');
    expect(sink.isRetriable(error)).toBe(true);
    expect(await applied()).toEqual([]);
    expect(pool.totalCount).toBe(0);
    const again = await sink.transaction(async (tx) => {
      await tx.query('INSERT INTO applied VALUES (1), (2)');
      return backendPid(tx);
    });
    expect(again).not.toBe(firstPid);
    expect(await applied()).toEqual([1, 2]);
  });

  it('is retriable when the session ends during a statement (57P01), and nothing of it holds', async () => {
    const pool = db.pool({ max: 1 });
    const sink = postgres(pool);

    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query('INSERT INTO applied VALUES (1)');
        const pid = await backendPid(tx);
        const ending = settle().then(() => terminate(pid));
        try {
          await tx.query('SELECT pg_sleep(30)');
        } finally {
          await ending;
        }
      }),
    );

    expect(error.code).toBe('57P01');
    expect(sink.isRetriable(error)).toBe(true);
    expect(await applied()).toEqual([]);
    await settle();
    expect(pool.totalCount).toBe(0);
    await sink.transaction((tx) => tx.query('INSERT INTO applied VALUES (3)'));
    expect(await applied()).toEqual([3]);
  });

  it('is retriable when the session ends while the work awaits something else, after its last statement', async () => {
    const sink = postgres(db.pool());

    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query('INSERT INTO applied VALUES (1)');
        await terminate(await backendPid(tx));
        await settle();
      }),
    );

    // COMMIT on the broken client.
    expect(sink.isRetriable(error)).toBe(true);
    expect(await applied()).toEqual([]);
  });
});

describe("postgres(): the pool's query_timeout", () => {
  it('is retriable (pg says "Query read timeout"), nothing of it holds, and the client is dropped, not rolled back behind the statement', async () => {
    const pool = db.pool({ max: 1, query_timeout: 300 });
    const sink = postgres(pool);

    const error = await rejection(
      sink.transaction(async (tx) => {
        await tx.query('INSERT INTO applied VALUES (1)');
        await tx.query('SELECT pg_sleep(3)');
      }),
    );

    expect(error.message).toBe('Query read timeout');
    expect(sink.isRetriable(error)).toBe(true);
    expect(pool.totalCount).toBe(0);
    expect(await applied()).toEqual([]);
  });
});

describe('postgres(): no connection to be had', () => {
  const target = () => new URL(db.url);

  it('is retriable when nothing listens on the port (ECONNREFUSED)', async () => {
    const url = target();
    url.port = String(await freePort());
    const sink = postgres({ connectionString: url.toString() });

    const error = await rejection(sink.transaction((tx) => tx.query('SELECT 1')));

    expect(error.code).toBe('ECONNREFUSED');
    expect(sink.isRetriable(error)).toBe(true);
    await sink.close();
  });

  it("is retriable when the server does not answer within the pool's connectionTimeoutMillis", async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    const url = target();
    url.port = String((silent.address() as AddressInfo).port);
    const sink = postgres({ connectionString: url.toString(), connectionTimeoutMillis: 300 });

    const error = await rejection(sink.transaction((tx) => tx.query('SELECT 1')));

    expect(error.message).toBe('Connection terminated due to connection timeout');
    expect(sink.isRetriable(error)).toBe(true);
    await sink.close();
    for (const socket of sockets) socket.destroy();
    silent.close();
  });

  it('is retriable when no client of the pool becomes free within connectionTimeoutMillis', async () => {
    const pool = db.pool({ max: 1, connectionTimeoutMillis: 300 });
    const sink = postgres(pool);
    const held = await pool.connect();

    const error = await rejection(sink.transaction((tx) => tx.query('SELECT 1')));

    held.release();
    expect(error.message).toBe('timeout exceeded when trying to connect');
    expect(sink.isRetriable(error)).toBe(true);
  });

  it('is not retriable when the server refuses the password (28P01)', async () => {
    const url = target();
    url.password = 'not-the-password';
    const sink = postgres({ connectionString: url.toString() });

    const error = await rejection(sink.transaction((tx) => tx.query('SELECT 1')));

    expect(error.code).toBe('28P01');
    expect(sink.isRetriable(error)).toBe(false);
    await sink.close();
  });
});
