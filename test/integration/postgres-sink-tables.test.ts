// The sink creates its tables (checkpoints, dead letters, processed ids) on a first start on
// real PostgreSQL, where two `CREATE TABLE IF NOT EXISTS` of one table at once may fail the
// second (a duplicate row type, 23505): the four partitions of a super stream start at once,
// and so may two instances.
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import { postgres } from '../../src/postgres/index.js';
import { databaseSink } from '../../src/sink/database-sink.js';
import { processedIds } from '../../src/sink/processed-ids.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { appendJson } from '../support/jobs/sink-fixture.js';

const db = postgresForTests();

const STARTS = 6;
const PARTITIONS = 4;
const PER_PARTITION = 5;

/** A super stream of 4 partitions, each with `PER_PARTITION` messages of distinct ids. */
function superStream(): MemoryBroker {
  const broker = new MemoryBroker();
  const partitions = broker.createSuperStream('events', { partitions: PARTITIONS });
  partitions.forEach((partition, p) =>
    appendJson(
      broker,
      partition,
      Array.from({ length: PER_PARTITION }, (_, i) => ({ id: `${p}-${i}` })),
    ),
  );
  return broker;
}

/** A sink whose tables, named after `run`, do not exist yet: a first start. */
function sink(broker: MemoryBroker, run: number) {
  return databaseSink<{ id: string }>({
    name: 'first-start',
    source: broker.superStreamSource('events'),
    database: postgres(db.pool()),
    checkpointTable: `checkpoints_${run}`,
    onError: { deadLetterTable: `dead_letters_${run}` },
    maxBatchDelayMs: 0,
    into: processedIds<{ id: string }>({
      table: `processed_${run}`,
      id: (value) => value.id,
      apply: async (tx, batch) => {
        for (const m of batch.messages) {
          await tx.query(`INSERT INTO applied_${run} VALUES ($1)`, [m.value.id]);
        }
      },
    }),
  });
}

async function appliedIds(run: number): Promise<string[]> {
  const found = await db.query<{ id: string }>(`SELECT id FROM applied_${run} ORDER BY id`);
  return found.map((row) => row.id);
}

const everyId = Array.from(
  { length: PARTITIONS * PER_PARTITION },
  (_, n) => `${Math.floor(n / PER_PARTITION)}-${n % PER_PARTITION}`,
).sort();

describe('databaseSink on PostgreSQL: its tables on a first start', () => {
  it('starts on a fresh database with 4 partitions creating its tables at once, every time', async () => {
    for (let run = 0; run < STARTS; run++) {
      await db.query(`CREATE TABLE applied_${run} (id text PRIMARY KEY)`);
      const summary = await sink(superStream(), run).run({ untilCaughtUp: true });
      expect(summary.applied).toBe(PARTITIONS * PER_PARTITION);
      expect(await appliedIds(run)).toEqual(everyId);
    }
  });

  it('starts two instances at once on a fresh database, each message applied once', async () => {
    for (let run = STARTS; run < 2 * STARTS; run++) {
      await db.query(`CREATE TABLE applied_${run} (id text PRIMARY KEY)`);
      const broker = superStream();
      const [one, two] = await Promise.all([
        sink(broker, run).run({ untilCaughtUp: true }),
        sink(broker, run).run({ untilCaughtUp: true }),
      ]);
      expect(one.applied + two.applied).toBe(PARTITIONS * PER_PARTITION);
      expect(await appliedIds(run)).toEqual(everyId);
    }
  });
});
