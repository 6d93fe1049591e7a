// A guarded upsert (latestState's `version`) keeps the same row whatever the batches: rows
// applied in one statement give the table that applying them one by one gives, also when the
// versions are text the database casts (numeric strings: '9' < '10' for an integer column, not
// for JavaScript) or null, where the database alone can compare them.
import type { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pglite } from '../../src/pglite/index.js';
import { upsertRows } from '../../src/sink/upsert.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import { rows, startPglite } from '../support/jobs/sink-fixture.js';
import { bound } from '../support/timing.js';

let db: PGlite;
beforeAll(async () => {
  db = await startPglite();
}, bound(60_000));
afterAll(async () => {
  await db.close();
});

type Version = number | string | null;
type Row = Readonly<{ k: string; version: Version; v: number }>;

let tables = 0;
async function tableAfter(parts: readonly (readonly Row[])[]): Promise<unknown[]> {
  const table = `states_${++tables}`;
  await db.exec(`CREATE TABLE ${table} (k text PRIMARY KEY, version integer, v integer)`);
  const database = pglite(db);
  for (const part of parts) {
    await database.transaction((tx) =>
      upsertRows(tx, { table, conflict: ['k'], guard: 'version' }, part),
    );
  }
  return rows(db, `SELECT k, version, v FROM ${table} ORDER BY k`);
}

/** Splits `all` after each index of `cuts`. */
function split(all: readonly Row[], cuts: readonly number[]): Row[][] {
  const at = [...new Set(cuts.map((c) => c % (all.length + 1)))].sort((a, b) => a - b);
  const parts: Row[][] = [];
  let from = 0;
  for (const cut of [...at, all.length]) {
    parts.push(all.slice(from, cut));
    from = cut;
  }
  return parts;
}

const versionArb: fc.Arbitrary<Version> = fc.oneof(
  fc.integer({ min: 0, max: 12 }),
  fc.integer({ min: 0, max: 12 }).map(String),
  fc.constant(null),
);

const PARAMETERS = propertyParameters(150);

describe('upsertRows with a version guard', () => {
  it("keeps version '10' over '9' in an integer column, in one batch as in two", async () => {
    const rowsOf = [
      { k: 'a', version: '9', v: 1 },
      { k: 'a', version: '10', v: 2 },
    ];
    const expected = [{ k: 'a', version: 10, v: 2 }];
    expect(await tableAfter([rowsOf])).toEqual(expected);
    expect(await tableAfter([[rowsOf[0] as Row], [rowsOf[1] as Row]])).toEqual(expected);
  });

  it(
    'gives the table of applying each row alone, however the rows are split',
    async () => {
      const coverage = new Coverage('guarded upsert splits');
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ k: fc.constantFrom('a', 'b'), version: versionArb }), {
            minLength: 1,
            maxLength: 10,
          }),
          fc.array(fc.nat(), { maxLength: 3 }),
          async (drawn, cuts) => {
            coverage.run();
            const all = drawn.map((row, v) => ({ ...row, v }));
            const oneByOne = await tableAfter(all.map((row) => [row]));
            const parts = split(all, cuts);
            coverage.count('one batch', parts.length === 1);
            const ofKey = (k: string) => all.filter((r) => r.k === k).map((r) => r.version);
            coverage.count(
              'a key with a text version and another version',
              ['a', 'b'].some((k) => {
                const versions = ofKey(k);
                return versions.length >= 2 && versions.some((v) => typeof v === 'string');
              }),
            );
            coverage.count(
              'a key with a null version and another version',
              ['a', 'b'].some((k) => {
                const versions = ofKey(k);
                return versions.length >= 2 && versions.includes(null);
              }),
            );
            expect(await tableAfter(parts)).toEqual(oneByOne);
          },
        ),
        PARAMETERS,
      );
      expect(coverage.runsMade).toBe(PARAMETERS.numRuns);
      coverage.expectRates({
        'one batch': 0.15,
        'a key with a text version and another version': 0.5,
        'a key with a null version and another version': 0.4,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});

/** A key as JSON holds it, the way upsertRows tells keys apart (a Date by its time, a bigint by its digits). */
const asJson = (value: unknown): string =>
  JSON.stringify([
    value instanceof Date ? value.getTime() : typeof value === 'bigint' ? value.toString() : value,
  ]);

const keyArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '1',
    'a',
    '',
    'n1;',
    's1:a',
    1,
    0,
    -0,
    Number.NaN,
    Infinity,
    1n,
    null,
    undefined,
    true,
  ),
  fc.integer({ min: 0, max: 3 }).map((n) => new Date(n)),
  fc.integer({ min: 0, max: 3 }),
  fc.integer({ min: 0, max: 3 }).map(String),
  fc.constantFrom({ a: 1 }, [1], ['1']),
);

describe('upsertRows without a guard', () => {
  it('sends the last row of each key, keys told apart as JSON holds them (property)', async () => {
    const coverage = new Coverage('keys of one statement');
    await fc.assert(
      fc.asyncProperty(fc.array(keyArb, { minLength: 1, maxLength: 12 }), async (keys) => {
        coverage.run();
        const sent: unknown[][] = [];
        const tx = {
          query: (_: string, params?: readonly unknown[]) => {
            sent.push([...(params ?? [])]);
            return Promise.resolve({ rows: [], rowCount: 0 });
          },
        };
        await upsertRows(
          tx,
          { table: 't', conflict: ['k'] },
          keys.map((k, v) => ({ k, v })),
        );
        // The last row of each key, in the order of those last rows.
        const lastOf = new Map<string, number>();
        keys.forEach((k, v) => {
          lastOf.delete(asJson(k));
          lastOf.set(asJson(k), v);
        });
        coverage.count('two keys alike as JSON', lastOf.size < keys.length);
        const kind = (k: unknown) => (k instanceof Date ? 'date' : k === null ? 'null' : typeof k);
        coverage.count(
          'two keys of two kinds alike as JSON (1n and "1", a Date and its time, NaN and null)',
          keys.some((a, i) =>
            keys.some((b, j) => i < j && asJson(a) === asJson(b) && kind(a) !== kind(b)),
          ),
        );
        const values = (sent[0] ?? []).filter((_, i) => i % 2 === 1);
        expect(values).toEqual([...lastOf.values()]);
      }),
      propertyParameters(300),
    );
    coverage.expectRates({
      'two keys alike as JSON': 0.3,
      'two keys of two kinds alike as JSON (1n and "1", a Date and its time, NaN and null)': 0.05,
    });
  });
});
