// The guide's windowOutputs fragment on a fresh PostgreSQL database: the sink creates its
// table (and the late and dead-letter tables) at its start, as it does on PGlite
// (test/component/sink/window-outputs-table.test.ts); a table of another shape stops it there.
import { describe, expect, it } from 'vitest';
import { SinkError, SinkTableError } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import {
  billingTables,
  expectedBilling,
  guideSink,
  hourlyTotalsBroker,
} from '../support/jobs/guide-billing.js';
import { bound } from '../support/timing.js';

const db = postgresForTests();

describe('windowOutputs on PostgreSQL: its tables', () => {
  it(
    "runs the guide's fragment on a fresh database (two instances at once), and stops on a table of another shape",
    async () => {
      const broker = await hourlyTotalsBroker();
      // Two instances at once: both create the tables, neither fails on the other's.
      const database = postgres(db.pool());
      await Promise.all([
        guideSink(broker, database).run({ untilCaughtUp: true }),
        guideSink(broker, database).run({ untilCaughtUp: true }),
      ]);
      const expected = await expectedBilling(broker);
      expect(await billingTables(database)).toEqual(expected);
      expect(expected.billing).toHaveLength(9);
      expect(expected).toMatchObject({ late: 1, dead: 1 });
      const types = await db.query(
        "SELECT column_name AS column, data_type AS type FROM information_schema.columns WHERE table_name = 'billing' ORDER BY ordinal_position",
      );
      expect(types).toEqual([
        { column: 'key', type: 'text' },
        { column: 'window_start', type: 'timestamp with time zone' },
        { column: 'window_end', type: 'timestamp with time zone' },
        { column: 'count', type: 'integer' },
        { column: 'cents', type: 'bigint' },
      ]);

      await db.query('ALTER TABLE billing ALTER COLUMN cents TYPE numeric');
      const error = await guideSink(broker, database)
        .run({ untilCaughtUp: true })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SinkError);
      expect(error).toMatchObject({ stage: 'prepare', retriable: false });
      expect((error as SinkError).cause).toBeInstanceOf(SinkTableError);
      expect((error as SinkError).cause).toMatchObject({
        table: 'billing',
        column: 'cents',
        expected: 'type bigint',
        found: 'type numeric',
      });
    },
    bound(120_000),
  );
});
