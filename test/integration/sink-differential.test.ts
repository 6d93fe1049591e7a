// The database sink itself, differentially: the same random streams applied by databaseSink
// through pglite() (the embedded default) and through postgres() (the real server) give the
// same tables, shape by shape: windowOutputs of a job's results with their late-value and
// dead-letter tables, latestState of the same results, eachBatch and processedIds of a JSON
// stream that repeats ids, and the sink's own dead-letter table for messages that do not
// decode. Every statement of the sink runs on both: the checkpoint table and its lock, the
// upserts, the side tables. (postgres-differential.test.ts compares the port alone.)
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aggregate, jsonMessage, type PackMode } from '../../src/index.js';
import { sourceMessage } from '../../src/codecs/source-message.js';
import { pglite } from '../../src/pglite/index.js';
import { postgres } from '../../src/postgres/index.js';
import { databaseSink, type SinkRunSummary } from '../../src/sink/database-sink.js';
import { eachBatch } from '../../src/sink/each-batch.js';
import { latestState } from '../../src/sink/latest-state.js';
import { processedIds } from '../../src/sink/processed-ids.js';
import type { SinkDatabase } from '../../src/database/sink-database.js';
import { windowOutputs } from '../../src/sink/window-outputs.js';
import { Coverage, PROPERTY_TIMEOUT_MS } from '../support/arbitraries/coverage.js';
import { lateReadingsArb } from '../support/arbitraries/late-readings-arbitrary.js';
import { brokerWithReadings, totalOfReadings, type Reading } from '../support/jobs/memory-job.js';
import { postgresForTests } from '../support/brokers/postgres.js';

const db = postgresForTests();

/** Runs of the property; each applies four sinks on each database (about 1 s a run here). */
const RUNS = 20;

/** Readings of three sensors over a few minutes, some late; a value divisible by 13 is refused by the job's map (a dead letter). */
const readingsArb = lateReadingsArb(60);

/** Events with ids that repeat; null stands for a message that is not JSON. */
const eventsArb = fc.array(
  fc.option(
    fc.record({ id: fc.integer({ min: 0, max: 15 }), v: fc.integer({ min: -99, max: 99 }) }),
    {
      freq: 8,
    },
  ),
  { minLength: 1, maxLength: 60, size: 'max' },
);

const scenarioArb = fc.record({
  readings: readingsArb,
  events: eventsArb,
  pack: fc.constantFrom<PackMode>('sections', 'batch', 'single'),
  batch: fc.integer({ min: 1, max: 12 }),
});

const TABLES = [
  'totals',
  'totals_late',
  'totals_dead',
  'latest',
  'latest_late',
  'latest_dead',
  'events',
  'event_ids',
  'events_once',
  'undecoded',
  'stream_windows_checkpoints',
];

async function reset(database: SinkDatabase): Promise<void> {
  await database.transaction(async (tx) => {
    await tx.query(`DROP TABLE IF EXISTS ${TABLES.join(', ')}`);
    await tx.query(
      'CREATE TABLE totals (key text, window_start timestamptz, window_end timestamptz, ' +
        'count integer, total integer, PRIMARY KEY (key, window_start))',
    );
    await tx.query(
      'CREATE TABLE latest (sensor text PRIMARY KEY, version bigint NOT NULL, total integer NOT NULL)',
    );
    for (const side of ['totals', 'latest']) {
      await tx.query(
        `CREATE TABLE ${side}_late (result_offset bigint, position integer, value jsonb)`,
      );
      await tx.query(
        `CREATE TABLE ${side}_dead (result_offset bigint, source_offset bigint, stage text, ` +
          'error text, message bytea)',
      );
    }
    await tx.query('CREATE TABLE events (message_offset bigint, id integer, v integer)');
    await tx.query('CREATE TABLE events_once (id integer, v integer)');
  });
}

/** Every table, each value as text, in a fixed order. */
async function tables(database: SinkDatabase): Promise<Record<string, unknown>> {
  const found: Record<string, unknown> = {};
  await database.transaction(async (tx) => {
    for (const table of TABLES) {
      const { rows } = await tx.query<{ row: string }>(
        `SELECT t::text AS row FROM ${table} AS t ORDER BY 1`,
      );
      found[table] = rows
        .map((r) => r.row)
        .map((row) => row.replace(/,"?\d{4}-\d\d-\d\d [^,)]*"?\)$/, ')'));
    }
  });
  return found;
}

/** The four sinks over `broker`, one after the other, each until caught up. */
async function applyAll(
  broker: ReturnType<typeof brokerWithReadings>,
  database: SinkDatabase,
  batch: number,
): Promise<SinkRunSummary[]> {
  const common = { database, maxBatchMessages: batch, maxBatchDelayMs: 0, retryDelayMs: 1 };
  const sinks = [
    databaseSink({
      ...common,
      name: 'totals',
      source: broker.source('target'),
      into: windowOutputs<{ total: number }>({
        table: 'totals',
        columns: (output) => ({ total: output.value.total }),
        lateTable: 'totals_late',
        deadLetterTable: 'totals_dead',
      }),
    }),
    databaseSink({
      ...common,
      name: 'latest',
      source: broker.source('target'),
      into: latestState<{ total: number }>({
        table: 'latest',
        key: 'sensor',
        version: 'version',
        row: (output) => ({
          sensor: String(output.key),
          version: output.start,
          total: output.value.total,
        }),
        lateTable: 'latest_late',
        deadLetterTable: 'latest_dead',
      }),
    }),
    databaseSink({
      ...common,
      name: 'events',
      source: broker.source('events'),
      onError: { deadLetterTable: 'undecoded' },
      into: eachBatch<{ id: number; v: number }>({
        apply: async (tx, { messages }) => {
          for (const m of messages) {
            await tx.query('INSERT INTO events VALUES ($1, $2, $3)', [
              m.offset.toString(),
              m.value.id,
              m.value.v,
            ]);
          }
        },
      }),
    }),
    databaseSink({
      ...common,
      name: 'events-once',
      source: broker.source('events'),
      onError: { deadLetterTable: 'undecoded' },
      into: processedIds<{ id: number; v: number }>({
        table: 'event_ids',
        id: (value) => String(value.id),
        apply: async (tx, { messages }) => {
          for (const m of messages) {
            await tx.query('INSERT INTO events_once VALUES ($1, $2)', [m.value.id, m.value.v]);
          }
        },
      }),
    }),
  ];
  const summaries: SinkRunSummary[] = [];
  for (const sink of sinks) summaries.push(await sink.run({ untilCaughtUp: true }));
  return summaries;
}

let embedded: PGlite;
beforeAll(async () => {
  embedded = await PGlite.create();
});
afterAll(async () => {
  await embedded.close();
});

describe('databaseSink, PGlite against PostgreSQL', () => {
  it(
    'leaves the same tables on both, every shape, side table and dead-letter table',
    async () => {
      const one = pglite(embedded);
      const real = postgres(db.pool());
      const coverage = new Coverage('sink: pglite against postgres');
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(scenarioArb, async ({ readings, events, pack, batch }) => {
          coverage.run();
          const broker = brokerWithReadings(readings, { chunkSize: 3 });
          broker.createStream('events');
          for (let i = 0; i < events.length; i += 4) {
            broker.append(
              'events',
              events
                .slice(i, i + 4)
                .map((e) => (e === null ? sourceMessage('not json {') : jsonMessage(e))),
            );
          }
          await aggregate<Reading>(broker.source('source'))
            .map((r) => {
              if (r.value % 13 === 0) throw new Error(`refused ${r.value}`);
              return r;
            })
            .onError('dead-letter')
            .tumbling('1m')
            .key((r) => r.sensor)
            .aggregate(totalOfReadings)
            .to(broker.target('target', { producer: 'totals' }), { pack })
            .run({ untilCaughtUp: true });

          await Promise.all([reset(one), reset(real)]);
          const onEmbedded = await applyAll(broker, one, batch);
          const onReal = await applyAll(broker, real, batch);
          expect(onReal).toEqual(onEmbedded);
          const expected = await tables(one);
          expect(await tables(real)).toEqual(expected);

          const count = (table: string) => (expected[table] as unknown[]).length;
          coverage.count('runs with >= 3 windows', count('totals') >= 3);
          coverage.count('runs with late values', count('totals_late') > 0);
          coverage.count("runs with the job's dead letters", count('totals_dead') > 0);
          coverage.count('runs with undecodable messages', count('undecoded') > 0);
          coverage.count('runs with repeated ids', count('events_once') < count('events'));
          coverage.count('runs of >= 3 batches', events.length >= 3 * batch);
        }),
        {
          numRuns: RUNS,
          ...(process.env.PROPERTY_SEED === undefined
            ? {}
            : { seed: Number(process.env.PROPERTY_SEED) }),
        },
      );
      console.log(
        `sink differential: ${RUNS} runs in ${Math.round(performance.now() - started)} ms`,
      );
      expect(coverage.runsMade).toBe(RUNS);
      coverage.expectRates({
        'runs with >= 3 windows': 0.8,
        'runs with late values': 0.3,
        "runs with the job's dead letters": 0.5,
        'runs with undecodable messages': 0.5,
        'runs with repeated ids': 0.5,
        'runs of >= 3 batches': 0.3,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
