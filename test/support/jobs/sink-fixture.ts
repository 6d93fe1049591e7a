// What the database sink's tests share: one PGlite per test file (it takes seconds to start)
// with tables named per test, the embedded broker, and SinkDatabase wrappers that fail on cue.
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll } from 'vitest';
import { jsonMessage } from '../../../src/codecs/source-message.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import type { SinkDatabase } from '../../../src/database/sink-database.js';
import { bound } from '../timing.js';

/** A fresh in-process database; close it in afterAll. */
export async function startPglite(): Promise<PGlite> {
  const db = new PGlite();
  await db.waitReady;
  return db;
}

/**
 * The test file's PGlite, started in beforeAll and closed in afterAll: call at a file's top
 * level. What it returns stands for that database (use it inside tests and hooks only).
 */
export function pgliteForTests(): PGlite {
  let db: PGlite | undefined;
  beforeAll(async () => {
    db = await startPglite();
  }, bound(60_000));
  afterAll(async () => {
    await db?.close();
  });
  const current = (): PGlite => {
    if (db === undefined) throw new Error('pgliteForTests: no database yet');
    return db;
  };
  // The target is a stand-in: every member is read from the current database.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- see above
  return new Proxy({} as PGlite, {
    get(_, key) {
      const value: unknown = Reflect.get(current(), key);
      return typeof value === 'function' ? (value as () => unknown).bind(current()) : value;
    },
  });
}

/** Appends `values` to `stream` as JSON messages, `perChunk` to a chunk. */
export function appendJson(
  broker: MemoryBroker,
  stream: string,
  values: readonly unknown[],
  perChunk = values.length,
): void {
  for (let i = 0; i < values.length; i += perChunk) {
    broker.append(
      stream,
      values.slice(i, i + perChunk).map((v) => jsonMessage(v)),
    );
  }
}

/** The rows of `sql`, numbers and text as PGlite gives them. */
export async function rows<Row = Record<string, unknown>>(db: PGlite, sql: string): Promise<Row[]> {
  return (await db.query<Row>(sql)).rows;
}

/** The sink's checkpoint of `stream`, -1 when it has none. */
export async function checkpointOf(db: PGlite, sink: string, stream: string): Promise<bigint> {
  const found = await rows<{ o: string }>(
    db,
    `SELECT last_offset::text AS o FROM stream_windows_checkpoints WHERE sink = '${sink}' AND stream = '${stream}'`,
  );
  return found[0] === undefined ? -1n : BigInt(found[0].o);
}

/** Whether `sql` is a batch transaction's first statement: its claim of the checkpoint row. */
export function claimsCheckpoint(sql: string): boolean {
  return sql.startsWith('UPDATE') && sql.includes('last_offset');
}

/** An error as PostgreSQL reports it, with its SQLSTATE. */
export function sqlError(code: string, message = `simulated ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * A SinkDatabase over `db` whose `fault(n)` decides a failure of its n-th batch transaction
 * (one that claims a checkpoint row; counted from 1): 'before' throws inside the transaction
 * once the work ran (all of it rolled back: a crash before the commit), 'after' throws once it
 * committed (a crash between the commit and the next read, or a connection lost while the
 * commit's answer was on its way).
 */
export function faultyDatabase(
  db: PGlite,
  fault: (batch: number) => { when: 'before' | 'after'; error: Error } | undefined,
): SinkDatabase & { readonly batches: number } {
  const inner = pglite(db);
  let batches = 0;
  return {
    get batches() {
      return batches;
    },
    async transaction(work) {
      let planned: ReturnType<typeof fault>;
      const result = await inner.transaction(async (tx) => {
        let isBatch = false;
        const value = await work({
          query: (sql, params) => {
            if (!isBatch && claimsCheckpoint(sql)) {
              isBatch = true;
              planned = fault(++batches);
            }
            return tx.query(sql, params);
          },
        });
        if (planned?.when === 'before') throw planned.error;
        return value;
      });
      if (planned?.when === 'after') throw planned.error;
      return result;
    },
    isRetriable: (error) => inner.isRetriable(error),
    close: () => inner.close(),
  };
}
