// upsertRows' unnest statement on the real PostgreSQL, through pg (which writes an array
// parameter as one literal of its own making, where PGlite has its own serializers): the table
// it leaves is the one multi-row VALUES leaves, a round past the old parameter bound is one
// statement, and what VALUES refuses it refuses with the same SQLSTATE. PGlite:
// test/component/sink/upsert-statements.test.ts.
import { describe, expect, it } from 'vitest';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import {
  createTable,
  shapeOf,
  sqlStateOf,
  tableJson,
  trickyRows,
  upsertInto,
} from '../support/jobs/upsert-statements.js';
import { bound } from '../support/timing.js';

const db = postgresForTests();

describe('upsertRows with the array types of the table, on PostgreSQL', () => {
  it(
    'leaves the table VALUES leaves, one statement a round, refusing what it refuses alike',
    async () => {
      const database = postgres(db.pool({ max: 1 }));
      await createTable(database, 'via_values');
      const { arrayTypes } = await createTable(database, 'via_unnest');
      const rows = trickyRows();
      const later = rows.slice(0, 6).map((row, i) => ({ ...row, s: `later ${i}`, n: null }));
      expect((await upsertInto(database, 'via_values', [rows, later])).map(shapeOf)).toEqual([
        'values',
        'values',
      ]);
      expect(
        (await upsertInto(database, 'via_unnest', [rows, later], arrayTypes)).map(shapeOf),
      ).toEqual(['unnest', 'unnest']);
      const table = await tableJson(database, 'via_unnest');
      expect(table).toEqual(await tableJson(database, 'via_values'));
      expect(table).toHaveLength(rows.length - 1);
      expect(table.join('\n')).toContain('"s":"é漢字🙂"');

      // 7,000 rows of 5 columns: 35,000 parameters as VALUES, two statements.
      const columns = 'k text PRIMARY KEY, a integer, b bigint, c numeric, d text';
      await createTable(database, 'wide_values', columns);
      const wide = await createTable(database, 'wide_unnest', columns);
      const many = Array.from({ length: 7_000 }, (_, n) => ({
        k: `k${n}`,
        a: n,
        b: BigInt(n) * 2n ** 40n,
        c: n / 8,
        d: n % 3 === 0 ? null : `"${n}"`,
      }));
      expect((await upsertInto(database, 'wide_values', [many])).map(shapeOf)).toEqual([
        'values',
        'values',
      ]);
      expect(
        (await upsertInto(database, 'wide_unnest', [many], wide.arrayTypes)).map(shapeOf),
      ).toEqual(['unnest']);
      expect(await tableJson(database, 'wide_unnest')).toEqual(
        await tableJson(database, 'wide_values'),
      );

      const refused = [
        { k: 'long', s: 'thirteen char' },
        { k: 'word', i: 'x' },
        { k: 'big', b: '9223372036854775808' },
        { k: null, i: 1 },
        { k: 'json', j: '{not json' },
      ];
      for (const [row, state] of refused.map(
        (r, i) => [r, ['22001', '22P02', '22003', '23502', '22P02'][i]] as const,
      )) {
        expect(await sqlStateOf(upsertInto(database, 'via_unnest', [[row]], arrayTypes))).toBe(
          state,
        );
        expect(await sqlStateOf(upsertInto(database, 'via_values', [[row]]))).toBe(state);
      }
    },
    bound(60_000),
  );
});
