// The database sink over RabbitMQ's source (chunks and credit as the broker delivers them),
// into PGlite: every message once through crashes after commits and two instances at once.
import { describe, expect, it } from 'vitest';
import { jsonMessage, SinkError } from '../../src/index.js';
import { databaseSink } from '../../src/sink/database-sink.js';
import { eachBatch } from '../../src/sink/each-batch.js';
import type { SinkDatabase } from '../../src/database/sink-database.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { faultyDatabase, rows, sqlError, pgliteForTests } from '../support/jobs/sink-fixture.js';

const real = rabbitForTests();
const db = pgliteForTests();

describe('databaseSink over RabbitMQ', () => {
  it('applies every message once through crashes after commits, two instances at once', async () => {
    const stream = await real.newStream('sink-in');
    const count = 300;
    await publishAll(
      real.rabbit,
      stream,
      Array.from({ length: count }, (_, v) => jsonMessage({ v })),
    );
    await db.exec(
      'CREATE TABLE rabbit_applied (message_offset bigint NOT NULL, v integer NOT NULL)',
    );
    const sink = (database: SinkDatabase, maxBatchMessages: number) =>
      databaseSink<{ v: number }>({
        name: 'rabbit-sink',
        source: real.rabbit.source(stream),
        database,
        maxBatchMessages,
        maxBatchDelayMs: 0,
        into: eachBatch<{ v: number }>({
          apply: async (tx, batch) => {
            for (const m of batch.messages) {
              await tx.query('INSERT INTO rabbit_applied VALUES ($1, $2)', [
                m.offset.toString(),
                m.value.v,
              ]);
            }
          },
        }),
      });
    // Each instance dies after the commit of its 3rd batch twice, then runs to the end.
    const live = async (maxBatchMessages: number): Promise<void> => {
      for (let crashes = 0; ; crashes++) {
        const database = faultyDatabase(db, (n) =>
          crashes < 2 && n === 3 ? { when: 'after', error: sqlError('XX000', 'crash') } : undefined,
        );
        try {
          await sink(database, maxBatchMessages).run({ untilCaughtUp: true });
          return;
        } catch (error) {
          if (!(error instanceof SinkError && crashes < 2)) throw error;
        }
      }
    };
    await Promise.all([live(7), live(13)]);
    const applied = await rows<{ o: string; v: number }>(
      db,
      'SELECT message_offset::text AS o, v FROM rabbit_applied ORDER BY message_offset',
    );
    expect(applied).toEqual(Array.from({ length: count }, (_, v) => ({ o: String(v), v })));
  });
});
