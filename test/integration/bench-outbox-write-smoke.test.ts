import { describe, expect, it } from 'vitest';
import { outboxWriteCases } from '../../bench/outbox-write.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

// The outbox-write bench case at a tiny size against the real PostgreSQL, so that it keeps
// building and running. Nothing here asserts a timing: figures at this size mean nothing.
const database = postgresForTests();

describe('bench smoke, outbox writes', () => {
  it(
    'runs writeOutboxAll against writeOutbox per event at every size, and cleans up',
    async () => {
      const results = await outboxWriteCases({
        events: 30,
        singleEvents: 4,
        repeats: 1,
        postgresUrl: database.url,
      });

      expect(results.map((result) => result.name)).toEqual([
        'outbox-write/1-per-transaction',
        'outbox-write/100-per-transaction',
        'outbox-write/10000-per-transaction',
      ]);
      expect(results.map((result) => result.values?.events)).toEqual([4, 30, 30]);
      for (const result of results) {
        expect(Object.keys(result.ratios)).toEqual(['single']);
        expect(result.msgsPerSec).toBeGreaterThan(0);
        const values = result.values ?? {};
        expect(values['singleMin']).toBeLessThanOrEqual(values['singleMax'] ?? NaN);
        expect(values['listMsMin']).toBeLessThanOrEqual(values['listMsMax'] ?? NaN);
        expect(values['singleMsMin']).toBeLessThanOrEqual(values['singleMsMax'] ?? NaN);
      }
      // The bench dropped what it made: its tables were its own.
      expect(
        await database.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE 'bench_%'`),
      ).toEqual([]);
    },
    bound(120_000),
  );
});
