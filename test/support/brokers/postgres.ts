// Helpers for tests against the real PostgreSQL started by test/integration/global-setup.ts.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';

/** A test file's own database, made for it and dropped when it ends. */
export interface PostgresForTests {
  /** The database's URL; set in beforeAll, so read it inside tests and hooks only. */
  readonly url: string;
  /** A pool on the database, ended when the file's tests are done. */
  pool(config?: Omit<pg.PoolConfig, 'connectionString'>): pg.Pool;
  /** Runs one statement on the database through a connection of the file's own. */
  query<Row extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
  ): Promise<Row[]>;
}

/**
 * Creates a database of the file's own in beforeAll (files running at once never share a
 * table) and, in afterAll, ends the pools handed out and drops it. Call it at a file's top
 * level, before the file's own hooks.
 */
export function postgresForTests(): PostgresForTests {
  const name = `sw_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  let url: string | undefined;
  const pools: pg.Pool[] = [];
  beforeAll(async () => {
    await asAdmin((admin) => admin.query(`CREATE DATABASE ${name}`));
    url = databaseUrl(inject('postgresUrl'), name);
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    if (url !== undefined)
      await asAdmin((admin) => admin.query(`DROP DATABASE ${name} WITH (FORCE)`));
  });
  const live: PostgresForTests = {
    get url() {
      if (url === undefined) throw new Error('postgresForTests: no database yet');
      return url;
    },
    pool(config = {}) {
      const pool = new pg.Pool({ ...config, connectionString: live.url });
      pools.push(pool);
      return pool;
    },
    async query<Row extends pg.QueryResultRow>(sql: string, params?: unknown[]) {
      const client = new pg.Client(live.url);
      await client.connect();
      try {
        return (await client.query<Row>(sql, params)).rows;
      } finally {
        await client.end();
      }
    },
  };
  return live;
}

/** The URL of `database` on the server `serverUrl` names. */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

async function asAdmin(work: (admin: pg.Client) => Promise<unknown>): Promise<void> {
  const admin = new pg.Client(inject('postgresUrl'));
  await admin.connect();
  try {
    await work(admin);
  } finally {
    await admin.end();
  }
}
