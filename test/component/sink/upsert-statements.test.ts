// upsertRows given the table's array types (windowOutputs reads them at the sink's start) sends
// a round of rows as ONE `INSERT ... SELECT * FROM unnest($1::type[], ...)` statement, and the
// table it leaves is the one multi-row VALUES leaves: NULLs, numeric, bigint, text that an array
// literal must quote or escape, unicode, time, JSON; a round past PostgreSQL's parameter bound
// in one statement; errors with the same SQLSTATE (dead-lettering goes by it). On PGlite;
// test/integration/postgres-upsert-statements.test.ts does the same on PostgreSQL.
import { describe, expect, it } from 'vitest';
import { pglite } from '../../../src/pglite/index.js';
import { upsertRows } from '../../../src/sink/upsert.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import {
  createTable,
  recording,
  shapeOf,
  sqlStateOf,
  tableJson,
  trickyRows,
  upsertInto,
} from '../../support/jobs/upsert-statements.js';

const db = pgliteForTests();

let tables = 0;
const fresh = (prefix: string) => `${prefix}_${++tables}`;

describe('upsertRows with the array types of the table', () => {
  it('reads an array type for each column an array parameter can carry', async () => {
    const database = pglite(db);
    await db.exec(
      "CREATE DOMAIN cents AS bigint CHECK (VALUE >= 0); CREATE TYPE mood AS ENUM ('ok')",
    );
    const { arrayTypes } = await createTable(
      database,
      fresh('types'),
      'k text PRIMARY KEY, s varchar(12), c char(3), bits bit(3), n numeric(12,2), ' +
        'ts timestamptz, j jsonb, money cents, feeling mood, tags text[], area box',
    );
    expect(Object.fromEntries(arrayTypes)).toEqual({
      k: 'text[]',
      s: 'character varying[]',
      c: 'bpchar[]', // not character[]: char(1)[]
      bits: '"bit"[]', // not bit[]: bit(1)[]
      n: 'numeric[]',
      ts: 'timestamp with time zone[]',
      j: 'jsonb[]',
      money: 'cents[]',
      feeling: 'mood[]',
      // none for tags (unnest would flatten its arrays) nor area (box arrays take ';')
    });
  });

  it('leaves the table VALUES leaves, in one statement a round: NULLs, numbers, quotes, unicode, JSON', async () => {
    const database = pglite(db);
    const viaValues = fresh('via_values');
    const viaUnnest = fresh('via_unnest');
    await createTable(database, viaValues);
    const { arrayTypes } = await createTable(database, viaUnnest);
    const rows = trickyRows();
    // The second transaction updates half of the rows: the ON CONFLICT path.
    const later = rows.slice(0, 6).map((row, i) => ({ ...row, s: `later ${i}`, n: null }));

    const sentAsValues = await upsertInto(database, viaValues, [rows, later]);
    const sentAsUnnest = await upsertInto(database, viaUnnest, [rows, later], arrayTypes);

    expect(sentAsValues.map(shapeOf)).toEqual(['values', 'values']);
    expect(sentAsUnnest.map(shapeOf)).toEqual(['unnest', 'unnest']);
    const table = await tableJson(database, viaUnnest);
    expect(table).toEqual(await tableJson(database, viaValues));
    expect(table).toHaveLength(rows.length - 1); // a key twice in the rows: one row
    expect(table.join('\n')).toContain('"s":"é漢字🙂"');
    expect(table.join('\n')).toContain('"b":4611686018427387904');
  });

  it('sends a round past the old bound of 30,000 parameters as one statement, and no rows as none', async () => {
    const database = pglite(db);
    const columns = 'k text PRIMARY KEY, a integer, b integer, c integer, d integer';
    const viaValues = fresh('wide_values');
    const viaUnnest = fresh('wide_unnest');
    await createTable(database, viaValues, columns);
    const { arrayTypes } = await createTable(database, viaUnnest, columns);
    // 7,000 rows of 5 columns: 35,000 parameters as VALUES.
    const rows = Array.from({ length: 7_000 }, (_, n) => ({
      k: `k${n}`,
      a: n,
      b: -n,
      c: n % 7,
      d: null,
    }));

    expect((await upsertInto(database, viaValues, [rows])).map(shapeOf)).toEqual([
      'values',
      'values',
    ]);
    expect((await upsertInto(database, viaUnnest, [rows], arrayTypes)).map(shapeOf)).toEqual([
      'unnest',
    ]);
    expect(await tableJson(database, viaUnnest)).toEqual(await tableJson(database, viaValues));
    expect(await upsertInto(database, viaUnnest, [[]], arrayTypes)).toEqual([]);
  });

  it('fails where VALUES fails, with the same SQLSTATE', async () => {
    const database = pglite(db);
    const viaValues = fresh('refused_values');
    const viaUnnest = fresh('refused_unnest');
    await createTable(database, viaValues);
    const { arrayTypes } = await createTable(database, viaUnnest);
    const refused = [
      { k: 'long', s: 'thirteen char' }, // varchar(12): 22001
      { k: 'word', i: 'x' }, // 22P02
      { k: 'big', b: '9223372036854775808' }, // 22003
      { k: null, i: 1 }, // not null: 23502
      { k: 'json', j: '{not json' }, // 22P02
    ];
    const states = async (arrays?: ReadonlyMap<string, string>) => {
      const found: (string | undefined)[] = [];
      for (const row of refused) {
        const table = arrays === undefined ? viaValues : viaUnnest;
        found.push(await sqlStateOf(upsertInto(database, table, [[row]], arrays)));
      }
      return found;
    };
    expect(await states(arrayTypes)).toEqual(['22001', '22P02', '22003', '23502', '22P02']);
    expect(await states()).toEqual(await states(arrayTypes));
  });

  it('goes as VALUES for a column of an array type, and for bytes', async () => {
    const database = pglite(db);
    const table = fresh('arrays');
    const { arrayTypes } = await createTable(
      database,
      table,
      'k text PRIMARY KEY, tags text[], raw bytea',
    );
    const sent: string[] = [];
    const upsert = (row: Readonly<Record<string, unknown>>) =>
      database.transaction((tx) =>
        upsertRows(recording(tx, sent), { table, conflict: ['k'], arrayTypes }, [row]),
      );
    await upsert({ k: 'a', tags: ['x', 'y,z'], raw: null }); // tags has no array type
    await upsert({ k: 'b', raw: new Uint8Array([0, 255]) }); // bytes
    await upsert({ k: 'c', raw: null });
    expect(sent.map(shapeOf)).toEqual(['values', 'values', 'unnest']);
    expect(await tableJson(database, table)).toEqual([
      '{"k":"a","tags":["x","y,z"],"raw":null}',
      '{"k":"b","tags":null,"raw":"\\\\x00ff"}',
      '{"k":"c","tags":null,"raw":null}',
    ]);
  });

  it("keeps a guarded key's highest version, as VALUES does", async () => {
    const database = pglite(db);
    const columns = 'k text PRIMARY KEY, version integer, v text';
    const viaValues = fresh('guard_values');
    const viaUnnest = fresh('guard_unnest');
    await createTable(database, viaValues, columns);
    const { arrayTypes } = await createTable(database, viaUnnest, columns);
    // Text versions go to the database's comparison, a round each.
    const rows = [
      { k: 'a', version: 1, v: 'first' },
      { k: 'a', version: '10', v: 'ten' },
      { k: 'a', version: '9', v: 'nine' },
      { k: 'b', version: 2, v: 'two' },
    ];
    const upsert = (table: string, arrays?: ReadonlyMap<string, string>) =>
      database.transaction((tx) =>
        upsertRows(tx, { table, conflict: ['k'], guard: 'version', arrayTypes: arrays }, rows),
      );
    await upsert(viaValues);
    await upsert(viaUnnest, arrayTypes);
    expect(await tableJson(database, viaUnnest)).toEqual([
      '{"k":"a","version":10,"v":"ten"}',
      '{"k":"b","version":2,"v":"two"}',
    ]);
    expect(await tableJson(database, viaValues)).toEqual(await tableJson(database, viaUnnest));
  });
});
