import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { SinkError, SinkTableError, type SinkShape } from '../../../src/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { databaseSink, type DatabaseSink } from '../../../src/sink/database-sink.js';
import type { DecodedResult } from '../../../src/result-format/result-format.js';
import { windowOutputs, type WindowOutputsOptions } from '../../../src/sink/window-outputs.js';
import {
  billingTables,
  expectedBilling,
  guideSink,
  hourlyTotalsBroker,
} from '../../support/jobs/guide-billing.js';
import { pgliteForTests, rows } from '../../support/jobs/sink-fixture.js';
import type { MemoryBroker } from '../../../src/memory/index.js';

const db = pgliteForTests();
// The guide's tables have fixed names: each test starts from an empty schema.
beforeEach(async () => {
  await db.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
});

async function rejection(promise: Promise<unknown>): Promise<SinkError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SinkError);
  return error as SinkError;
}

/** A sink named `name` of the hourly totals into PGlite, doing `into`. */
function hourlySink<V>(broker: MemoryBroker, name: string, into: SinkShape<V>): DatabaseSink<V> {
  return databaseSink({ name, source: broker.source('hourly-totals'), database: pglite(db), into });
}

/** A windowOutputs sink into the default jsonb column of `name`, `${name}_late` and `${name}_dead`. */
function jsonbSink(broker: MemoryBroker, name: string): DatabaseSink<DecodedResult> {
  return hourlySink(
    broker,
    name,
    windowOutputs({ table: name, lateTable: `${name}_late`, deadLetterTable: `${name}_dead` }),
  );
}

/** Runs a windowOutputs sink of the hourly totals into `billing` as it stands; its error. */
async function runInto(
  broker: MemoryBroker,
  options: Partial<WindowOutputsOptions<{ cents: number }>> = {},
): Promise<SinkError> {
  const into = windowOutputs<{ cents: number }>({
    table: 'billing',
    columns: (output) => ({ cents: output.value.cents }),
    columnTypes: { cents: 'bigint' },
    ...options,
  });
  return rejection(hourlySink(broker, 'billing', into).run({ untilCaughtUp: true }));
}

const STANDARD =
  'key text NOT NULL, window_start timestamptz NOT NULL, window_end timestamptz NOT NULL';

/** The columns and keys of the public schema's tables, as information_schema tells them. */
async function schema(): Promise<unknown> {
  return {
    columns: await rows(
      db,
      `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name LIKE 'billing%'
       ORDER BY table_name, ordinal_position`,
    ),
    keys: await rows(
      db,
      `SELECT tc.table_name, tc.constraint_type, k.column_name
       FROM information_schema.table_constraints AS tc
       JOIN information_schema.key_column_usage AS k USING (constraint_schema, constraint_name)
       WHERE tc.table_schema = 'public' ORDER BY tc.table_name, k.ordinal_position`,
    ),
  };
}

describe('windowOutputs: its tables', () => {
  it('creates what the guide prints as its DDL', async () => {
    const guide = readFileSync(
      resolve(import.meta.dirname, '../../../docs/guides/into-a-database.md'),
      'utf8',
    );
    const ddl = /\*\*Its tables are created when missing\*\*[\s\S]*?```sql\n([\s\S]*?)```/.exec(
      guide,
    )?.[1];
    expect(ddl).toContain('CREATE TABLE billing');
    await db.exec(ddl ?? '');
    const printed = await schema();
    expect(printed).toMatchObject({
      columns: { length: 13 },
      keys: [
        { table_name: 'billing', constraint_type: 'PRIMARY KEY', column_name: 'key' },
        { table_name: 'billing', constraint_type: 'PRIMARY KEY', column_name: 'window_start' },
      ],
    });
    await db.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    await guideSink(await hourlyTotalsBroker(), pglite(db)).run({ untilCaughtUp: true });
    await db.exec('DROP TABLE stream_windows_checkpoints');
    expect(await schema()).toEqual(printed);
  });

  it("runs the guide's fragment on a fresh database: creates billing, billing_late and billing_dead", async () => {
    const broker = await hourlyTotalsBroker();
    const summary = await guideSink(broker, pglite(db)).run({ untilCaughtUp: true });

    const expected = await expectedBilling(broker);
    expect(await billingTables(pglite(db))).toEqual(expected);
    expect(expected.billing.length).toBe(9); // 3 customers, 3 hours closed (the 4th still open)
    expect(expected).toMatchObject({ late: 1, dead: 1 });
    expect(summary.applied).toBeGreaterThan(0);
    // Created with the types the reference documents, the key the upsert conflicts on.
    const columns = await rows<{ column: string; type: string; nullable: string }>(
      db,
      `SELECT column_name AS column, data_type AS type, is_nullable AS nullable
       FROM information_schema.columns WHERE table_name = 'billing' ORDER BY ordinal_position`,
    );
    expect(columns).toEqual([
      { column: 'key', type: 'text', nullable: 'NO' },
      { column: 'window_start', type: 'timestamp with time zone', nullable: 'NO' },
      { column: 'window_end', type: 'timestamp with time zone', nullable: 'NO' },
      { column: 'count', type: 'integer', nullable: 'NO' },
      { column: 'cents', type: 'bigint', nullable: 'YES' },
    ]);

    // A second run finds its tables and applies nothing again.
    const again = await guideSink(broker, pglite(db)).run({ untilCaughtUp: true });
    expect(again.applied).toBe(0);
    expect(await billingTables(pglite(db))).toEqual(expected);
  });

  it('creates a value jsonb column by default and writes every JSON value into it (a string, an array)', async () => {
    const broker = await hourlyTotalsBroker();
    await jsonbSink(broker, 'values').run({ untilCaughtUp: true });
    const stored = await rows<{ value: unknown }>(db, 'SELECT value FROM "values" LIMIT 1');
    expect(stored[0]?.value).toMatchObject({ cents: expect.any(Number) as number });

    for (const [name, value] of [
      ['text', 'a string'],
      ['list', [1, 'two']],
    ] as const) {
      const other = await hourlyTotalsBroker(() => value);
      await jsonbSink(other, name).run({ untilCaughtUp: true });
      const found = await rows<{ value: unknown }>(db, `SELECT DISTINCT value FROM ${name}`);
      expect(found).toEqual([{ value }]);
    }
  });

  it('stops at the start, nothing applied, on a column of another type, naming table, column and type', async () => {
    const broker = await hourlyTotalsBroker();
    await db.exec(
      `CREATE TABLE billing (${STANDARD}, count integer, cents text, PRIMARY KEY (key, window_start))`,
    );
    const error = await runInto(broker);
    expect(error).toMatchObject({ stage: 'prepare', retriable: false });
    expect(error.cause).toBeInstanceOf(SinkTableError);
    expect(error.cause).toMatchObject({
      code: 'SINK_TABLE_MISMATCH',
      table: 'billing',
      column: 'cents',
      expected: 'type bigint',
      found: 'type text',
    });
    expect(error.message).toContain("table 'billing' column 'cents': expected type bigint");
    expect(await rows(db, 'SELECT * FROM billing')).toEqual([]);
  });

  it('stops at the start on a standard column missing, or of a type that is not alike', async () => {
    const broker = await hourlyTotalsBroker();
    await db.exec(
      `CREATE TABLE billing (${STANDARD}, cents bigint, PRIMARY KEY (key, window_start))`,
    );
    expect((await runInto(broker)).cause).toMatchObject({
      column: 'count',
      expected: 'a column of type integer',
      found: 'none',
    });
    await db.exec('DROP TABLE billing');
    await db.exec(
      'CREATE TABLE billing (key text, window_start timestamp, window_end timestamptz, ' +
        'count bigint, cents bigint, PRIMARY KEY (key, window_start))',
    );
    expect((await runInto(broker)).cause).toMatchObject({
      column: 'window_start',
      expected: 'type timestamp with time zone',
      found: 'type timestamp without time zone',
    });
  });

  it('stops at the start without a unique key on (key, window_start)', async () => {
    const broker = await hourlyTotalsBroker();
    await db.exec(`CREATE TABLE billing (${STANDARD}, count integer, cents bigint, UNIQUE (key))`);
    expect((await runInto(broker)).cause).toMatchObject({
      table: 'billing',
      column: 'key, window_start',
      expected: 'a primary key or unique constraint on (key, window_start)',
      found: 'one on (key)',
    });
  });

  it('takes a table of its own with alike types (a bigint count, varchar key, int8 for bigint)', async () => {
    const broker = await hourlyTotalsBroker();
    await db.exec(
      'CREATE TABLE billing (key varchar(20), window_start timestamptz, window_end timestamptz, ' +
        'count bigint, cents int8, note text, PRIMARY KEY (key, window_start))',
    );
    // The guide's sink, as it writes its options.
    await guideSink(broker, pglite(db)).run({ untilCaughtUp: true });
    expect((await billingTables(pglite(db))).billing).toEqual(
      (await expectedBilling(broker)).billing,
    );
  });

  it('stops at the start on a missing table whose columns it does not know (columns without columnTypes)', async () => {
    const broker = await hourlyTotalsBroker();
    const error = await runInto(broker, { columnTypes: undefined });
    expect(error.cause).toMatchObject({ table: 'billing', column: undefined, found: 'none' });
    expect((error.cause as Error).message).toContain('give columnTypes');
  });

  it('stops at the start on a late table of another shape', async () => {
    const broker = await hourlyTotalsBroker();
    await db.exec('CREATE TABLE billing_late (result_offset bigint, value text)');
    const error = await runInto(broker, { lateTable: 'billing_late' });
    expect(error.cause).toMatchObject({ table: 'billing_late', column: 'position' });
  });

  it('refuses columnTypes that are not SQL type names, or that name a standard column', () => {
    const options = { table: 'billing', columns: () => ({}) };
    expect(() =>
      windowOutputs({ ...options, columnTypes: { cents: 'bigint); DROP TABLE x' } }),
    ).toThrow(/columnTypes.*SQL type name/);
    expect(() => windowOutputs({ ...options, columnTypes: { count: 'bigint' } })).toThrow(
      /standard column 'count'/,
    );
    for (const type of ['numeric(12,2)', 'double precision', 'text[]', 'character varying(20)']) {
      expect(() => windowOutputs({ ...options, columnTypes: { v: type } })).not.toThrow();
    }
  });
});
