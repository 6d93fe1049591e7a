import { describe, expect, it } from 'vitest';
import { sinkCases } from '../../bench/sink.js';
import { postgresForTests } from '../support/brokers/postgres.js';

// The sink bench case at a tiny size against the real PostgreSQL, so that it keeps building
// and running (test/unit/bench/bench-smoke.test.ts runs its PGlite half). Nothing here asserts a
// timing: figures at this size mean nothing.
const database = postgresForTests();

describe('bench smoke, database sink', () => {
  it('runs the sink case into PostgreSQL and PGlite, each against its plain loops (VALUES, unnest, COPY)', async () => {
    const results = await sinkCases({
      messages: 40,
      singleMessages: 6,
      repeats: 1,
      postgresUrl: database.url,
    });

    expect(results.map((result) => result.name)).toEqual([
      'sink/postgres/1-per-transaction',
      'sink/postgres/100-per-transaction',
      'sink/postgres/1000-per-transaction',
      'sink/pglite/1-per-transaction',
      'sink/pglite/100-per-transaction',
      'sink/pglite/1000-per-transaction',
    ]);
    for (const result of results) {
      expect(Object.keys(result.ratios)).toEqual(['best', 'values', 'unnest', 'copy']);
      expect(result.values?.bestMin).toBeLessThanOrEqual(result.values?.bestMax ?? 0);
      // PostgreSQL's backends' CPU is counted: the plain loops' CPU per row is more than this
      // process alone would have (not checked: ticks of 10 ms at this size), but never none.
      expect(result.values?.cpuUsPerRow).toBeGreaterThan(0);
    }
    // The bench dropped what it made: its tables were its own.
    expect(
      await database.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE 'bench_%'`),
    ).toEqual([]);
  });
});
