// The two databases the billing example runs on: PGlite in process (default, nothing to
// install) and a real PostgreSQL (STREAM_WINDOWS_BROKER=rabbitmq, at POSTGRES_URL or the
// local one that scripts/postgres.sh starts).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { SinkDatabase } from '../../src/index.js';
import { pglite } from '../../src/pglite/index.js';
import { postgres } from '../../src/postgres/index.js';

export interface BillingDatabase {
  readonly name: string;
  /** The schema holding the example's tables (its own, so a run starts from empty tables). */
  readonly schema: string;
  /** A sink's port on the database; closing it leaves the database open. */
  port(): SinkDatabase;
  /** Runs one statement outside any sink. */
  query<Row>(sql: string): Promise<Row[]>;
  close(): Promise<void>;
}

export async function embeddedDatabase(): Promise<BillingDatabase> {
  const db = await PGlite.create();
  const schema = 'billing_example';
  await db.exec(`CREATE SCHEMA ${schema}`);
  return {
    name: 'PGlite (in process)',
    schema,
    port: () => pglite(db),
    query: async <Row>(sql: string) => (await db.query<Row>(sql)).rows,
    close: () => db.close(),
  };
}

export async function postgresDatabase(): Promise<BillingDatabase> {
  const url =
    process.env.POSTGRES_URL ??
    execFileSync('scripts/postgres.sh', ['start'], { encoding: 'utf8' }).trim().split('\n').pop();
  const pool = new pg.Pool({ connectionString: url });
  // A fresh schema per run, dropped at the end, so that the run never meets another's rows.
  const schema = `billing_${randomUUID().slice(0, 8)}`;
  await pool.query(`CREATE SCHEMA ${schema}`);
  return {
    name: `PostgreSQL at ${url?.replace(/:[^:@/]*@/, ':***@')} (schema ${schema})`,
    schema,
    port: () => postgres(pool),
    query: async <Row>(sql: string) => (await pool.query(sql)).rows as Row[],
    close: async () => {
      await pool.query(`DROP SCHEMA ${schema} CASCADE`);
      await pool.end();
    },
  };
}
