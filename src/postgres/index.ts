// stream-windows/postgres: the database sink's real database, PostgreSQL through node-postgres
// (`pg`, an optional peer dependency).
import pg from 'pg';
import type { Pool, PoolClient, PoolConfig, QueryResult } from 'pg';
import { ConfigError } from '../common/errors.js';
import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { isRetriableSqlState } from '../database/retriable-sqlstate.js';
import { isLostConnection } from './lost-connection.js';

/**
 * A sink database over a `pg` pool: each transaction takes one client of the pool (BEGIN,
 * the work, COMMIT; ROLLBACK when the work throws) and gives it back, or destroys it when its
 * connection broke. BEGIN goes in the round trip of the work's first statement when that one
 * has no parameters (a simple query of the two; a statement of several answers with the last
 * one's rows); a work that sends no statement sends nothing. Given a pool, `close()` leaves it
 * open (it is the caller's); given a configuration, the adapter makes the pool and `close()`
 * ends it.
 *
 * Either way the adapter listens to the pool's `'error'` event, which `pg` emits when an idle
 * connection breaks (a server restart, `pg_terminate_backend`, SQLSTATE 57P01) and which would
 * end the process with no listener: a running sink logs it (warn) and its next transaction
 * connects anew. Listeners of your own on the pool are called as before.
 *
 * Timeouts are the pool's: `statement_timeout` (the server ends a statement running longer,
 * SQLSTATE 57014, not retriable), `idle_in_transaction_session_timeout`,
 * `connectionTimeoutMillis` (a connection not made in time: retriable), and on PostgreSQL 17
 * or later `options: '-c transaction_timeout=…'`.
 */
export function postgres(poolOrConfig: Pool | PoolConfig): SinkDatabase {
  // pg would take a URL string, or nothing, for an empty configuration and connect to its
  // defaults (localhost:5432): say what to give instead.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a JavaScript caller may pass anything
  if (typeof poolOrConfig !== 'object' || poolOrConfig === null) {
    throw new ConfigError(
      'postgres()',
      'takes a pg.Pool or a pg.PoolConfig (a URL as { connectionString: url })',
      poolOrConfig,
    );
  }
  const owned = !isPool(poolOrConfig);
  const pool = isPool(poolOrConfig) ? poolOrConfig : new pg.Pool(poolOrConfig);
  const idleErrors = idleErrorsOf(pool);
  // Clients in a transaction now: close() ends them, or a statement the server never answers
  // would hold the pool's end() (and the process) forever.
  const inUse = new Set<PoolClient>();
  let closing: Promise<void> | undefined;
  return {
    transaction: async (work) => {
      const guarded = await checkOut(pool);
      inUse.add(guarded.client);
      try {
        return await inTransaction(guarded, work);
      } finally {
        inUse.delete(guarded.client);
      }
    },
    isRetriable: (error) =>
      isRetriableSqlState((error as { code?: unknown } | null | undefined)?.code) ||
      isLostConnection(error),
    onIdleError: (listener) => {
      idleErrors.add(listener);
      return () => idleErrors.delete(listener);
    },
    close: () => {
      // A client with a statement under way is disconnected at once (pg's end() destroys its
      // socket): its transaction rolls back on the server, and its work rejects.
      for (const client of inUse) void client.end().catch(() => undefined);
      if (!owned) return Promise.resolve();
      closing ??= pool.end();
      return closing;
    },
  };
}

/** The listeners of each pool's idle errors: one 'error' listener per pool, however many adapters. */
const listened = new WeakMap<Pool, Set<(error: Error) => void>>();

/**
 * The listeners told of `pool`'s 'error' events, the pool listened to once. An idle client whose
 * connection breaks (a server restart, `pg_terminate_backend`) is dropped by the pool, which then
 * emits 'error': with no listener, Node would end the process. Ours, added beside any of the
 * caller's (each is called), tells the running sinks; the next transaction connects anew. It
 * stays on a caller's pool after close(), where an unheard error would still end the process.
 */
function idleErrorsOf(pool: Pool): Set<(error: Error) => void> {
  let listeners = listened.get(pool);
  if (listeners === undefined) {
    const set = new Set<(error: Error) => void>();
    // A pool taken by what it does may only connect: one that is no event emitter emits no
    // 'error' to hear.
    if (typeof (pool as Partial<Pool>).on === 'function') {
      pool.on('error', (error) => {
        for (const listener of set) listener(error);
      });
    }
    listened.set(pool, set);
    listeners = set;
  }
  return listeners;
}

function isPool(value: Pool | PoolConfig): value is Pool {
  return typeof (value as Partial<Pool>).connect === 'function';
}

/** A client checked out of the pool, heard from the moment the pool handed it over. */
interface GuardedClient {
  readonly client: PoolClient;
  /** The error its connection raised while checked out; undefined while none. */
  broken: Error | undefined;
  readonly onError: (error: Error) => void;
}

/**
 * Checks a client out, its 'error' listener attached inside the pool's callback. A checked-out
 * client has no listener of the pool's, and the server's message ending a session can arrive
 * in the same read as the one completing its connection (`pg_terminate_backend` right after a
 * connect): parsed before an awaited `pool.connect()` resumes, it would end the process.
 */
/** `pool.connect` as both kinds answer it: pg's pool calls back, a look-alike may return a promise. */
type ConnectEither = (
  callback: (error: Error | undefined, client: PoolClient | undefined) => void,
) => unknown;

function checkOut(pool: Pool): Promise<GuardedClient> {
  return new Promise((resolve, reject) => {
    const take = (client: PoolClient): void => {
      const guarded: GuardedClient = {
        client,
        broken: undefined,
        onError: (cause) => (guarded.broken = cause),
      };
      client.on('error', guarded.onError);
      resolve(guarded);
    };
    // pg's pool answers the callback and returns nothing; a pool taken by what it does may
    // answer with a promise instead (then the listener comes once it resolves).
    const connect = pool.connect.bind(pool) as unknown as ConnectEither;
    const answered = connect((error, client) => {
      if (error instanceof Error || client === undefined) {
        reject(error ?? new Error('the pool gave no client'));
        return;
      }
      take(client);
    });
    if (answered instanceof Promise) (answered as Promise<PoolClient>).then(take, reject);
  });
}

async function inTransaction<T>(
  guarded: GuardedClient,
  work: (tx: SinkTransaction) => Promise<T>,
): Promise<T> {
  const { client } = guarded;
  const statements = statementsOf(client);
  try {
    const result = await work(statements);
    if (!statements.begun) return result; // no statement: nothing to commit
    const commit = await client.query('COMMIT');
    // A statement that failed inside the work, its error caught there, leaves the transaction
    // aborted: the server answers COMMIT with ROLLBACK, and nothing of it holds.
    if (commit.command === 'ROLLBACK') throw new Error(ROLLED_BACK);
    return result;
  } catch (error) {
    // A statement still under way (the work gave up on it: the sink's transactionTimeoutMs), or
    // pg's own query_timeout: a ROLLBACK would queue behind it, so the client is dropped instead.
    if (guarded.broken === undefined && (statements.pending > 0 || isLostConnection(error))) {
      guarded.broken = error instanceof Error ? error : new Error(String(error));
    }
    if (guarded.broken === undefined && statements.begun) {
      await client.query('ROLLBACK').catch((rollbackFailed: unknown) => {
        guarded.broken =
          rollbackFailed instanceof Error ? rollbackFailed : new Error(String(rollbackFailed));
      });
    }
    throw error;
  } finally {
    client.off('error', guarded.onError);
    // Given an error, the pool destroys the client instead of keeping it.
    client.release(guarded.broken);
  }
}

/** As PGlite words it, so both adapters say the same. */
const ROLLED_BACK = 'Transaction was rolled back instead of committed';

/**
 * The statements of a transaction on `client`, counting those under way. BEGIN goes with the
 * first: in the same round trip when that one has no parameters (a simple query of the two,
 * which PostgreSQL runs in order, the second inside the transaction the first began), before
 * it otherwise.
 */
function statementsOf(
  client: PoolClient,
): SinkTransaction & { readonly pending: number; readonly begun: boolean } {
  let pending = 0;
  let begun = false;
  return {
    get pending() {
      return pending;
    },
    get begun() {
      return begun;
    },
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its rows' type, as pg's query<R>
    query: async <Row>(sql: string, params?: readonly unknown[]) => {
      pending++;
      try {
        let result: QueryResult;
        if (!begun && (params === undefined || params.length === 0)) {
          begun = true;
          result = lastOf(await client.query(`BEGIN; ${sql}`));
        } else {
          if (!begun) {
            begun = true;
            await client.query('BEGIN');
          }
          result = lastOf(await client.query(sql, params === undefined ? undefined : [...params]));
        }
        // rowCount is null for commands without a count (as PGlite's is undefined).
        return { rows: result.rows as Row[], rowCount: result.rowCount ?? result.rows.length };
      } finally {
        pending--;
      }
    },
  };
}

/** pg answers a simple query of several statements with one result each: the last one's. */
function lastOf(results: QueryResult | QueryResult[]): QueryResult {
  return Array.isArray(results) ? (results.at(-1) as QueryResult) : results;
}
