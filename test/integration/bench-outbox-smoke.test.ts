import { describe, expect, inject, it } from 'vitest';
import { outboxCases } from '../../bench/outbox.js';
import { expectRatioRanges } from '../support/bench/ratio-ranges.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

// The outbox bench case at a tiny size against the real PostgreSQL and RabbitMQ, so that it
// keeps building and running. Nothing here asserts a timing: figures at this size mean nothing.
const database = postgresForTests();

describe('bench smoke, outbox relay', () => {
  it(
    'runs the relay against the plain loop with 1 and 8 writers, and cleans up',
    async () => {
      const results = await outboxCases({
        rows: 16,
        singleRows: 8,
        repeats: 1,
        postgresUrl: database.url,
        rabbitUrl: inject('rabbitmqUrl'),
        shapes: [
          { writers: 1, rowsPerTransaction: 1 },
          { writers: 8, rowsPerTransaction: 100 },
        ],
      });

      expect(results.map((result) => result.name)).toEqual([
        'outbox/1-writers/1-per-transaction',
        'outbox/8-writers/100-per-transaction',
      ]);
      for (const result of results) {
        expect(Object.keys(result.ratios)).toEqual(['plain']);
        expect(result.msgsPerSec).toBeGreaterThan(0);
        const values = result.values ?? {};
        // Every row's latency was found: a commit time for each, none negative.
        expect(values['latencyP50Ms']).toBeGreaterThanOrEqual(0);
        expect(values['latencyP99Ms']).toBeGreaterThanOrEqual(values['latencyP50Ms'] ?? NaN);
        expect(values['plainLatencyP99Ms']).toBeGreaterThanOrEqual(0);
        expect(values['cpuUsPerRow']).toBeGreaterThan(0);
        expect(values['plainCpuUsPerRow']).toBeGreaterThan(0);
      }
      expectRatioRanges(results);
      // The bench dropped what it made: its tables were its own.
      expect(
        await database.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE 'bench_%'`),
      ).toEqual([]);
    },
    bound(120_000),
  );
});
