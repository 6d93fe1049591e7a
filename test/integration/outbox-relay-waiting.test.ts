// An outbox relay waiting behind an open transaction on PostgreSQL, counted through a wrapped
// database: it reads the committed rows held back without their bodies, then polls only
// whether that transaction is still the oldest open (not the rows again), and once it ends
// reads each row's body once and publishes every row once, the held-back transaction's first.
import { describe, expect, it } from 'vitest';
import type { SinkDatabase, SinkTransaction } from '../../src/database/sink-database.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { OutboxRelay } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import { writeOutbox } from '../../src/outbox/outbox-write.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { seenOutboxMessage, until } from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';

const pgt = postgresForTests();

/** What the relay asked of its database. */
interface Asked {
  transactions: number;
  /** Reads of the outbox (`OutboxTable.read`). */
  reads: number;
  /** Questions for the oldest open transaction alone (`OutboxTable.oldestOpen`). */
  gates: number;
  /** Bytes of the `body` values the statements returned. */
  bodyBytes: number;
}

/** A transaction counting what `asked` counts. */
class CountedTransaction implements SinkTransaction {
  constructor(
    private readonly tx: SinkTransaction,
    private readonly asked: Asked,
  ) {}

  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- as SinkTransaction's
  async query<Row = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<{ readonly rows: readonly Row[]; readonly rowCount: number }> {
    if (sql.startsWith('WITH gate AS')) this.asked.reads++;
    if (sql.startsWith('SELECT pg_snapshot_xmin')) this.asked.gates++;
    const result = await this.tx.query<Row>(sql, params);
    for (const row of result.rows) {
      const { body } = row as { body?: unknown };
      if (body instanceof Uint8Array) this.asked.bodyBytes += body.length;
    }
    return result;
  }
}

/** `database`, counting in `asked`. */
function counted(database: SinkDatabase, asked: Asked): SinkDatabase {
  return {
    transaction: (work) =>
      database.transaction((tx) => {
        asked.transactions++;
        return work(new CountedTransaction(tx, asked));
      }),
    isRetriable: (error) => database.isRetriable(error),
    close: () => database.close(),
  };
}

const TABLE = 'waiting_outbox';
const ROWS = 50;
/** Each committed row's body: about 4 KB, so that reading them again would show. */
const body = (i: number) => ({ i, pad: 'x'.repeat(4_000) });

describe('an outbox relay waiting behind an open transaction', () => {
  it(
    'polls only the oldest open transaction, reads the held rows without bodies, and each body once',
    async () => {
      const pool = pgt.pool({ max: 4 });
      await createOutboxTable(postgres(pool), TABLE);
      const broker = new MemoryBroker();
      broker.createStream('orders');
      const asked: Asked = { transactions: 0, reads: 0, gates: 0, bodyBytes: 0 };
      const relay = new OutboxRelay({
        name: 'waiter',
        database: counted(postgres(pool), asked),
        table: TABLE,
        broker,
        to: 'orders',
        pollIntervalMs: 10,
        maxBatchRows: 100,
      });
      const waits: bigint[] = [];
      let published = 0;
      relay.on('waiting', (event) => waits.push(event.openTransaction));
      relay.on('published', (event) => (published += event.rows));

      // An older transaction writes a row and stays open; a younger one commits ROWS rows.
      const open = await pool.connect();
      await open.query('BEGIN');
      await writeOutbox(open, { key: 'held', json: { held: true } }, { table: TABLE });
      const younger = await pool.connect();
      await younger.query('BEGIN');
      for (let i = 0; i < ROWS; i++) {
        await writeOutbox(younger, { key: `k${i % 5}`, json: body(i) }, { table: TABLE });
      }
      await younger.query('COMMIT');
      younger.release();

      const stop = new AbortController();
      const run = relay.run({ signal: stop.signal });
      try {
        await until(() => waits.length > 0, bound(20_000), "the relay's wait");
        const from = asked.transactions;
        await until(() => asked.transactions >= from + 20, bound(20_000), '20 polls while waiting');
        const polls = asked.transactions - from;
        // Old: every poll read the ROWS held rows again, bodies and all (~4 KB each).
        expect(asked.bodyBytes, `body bytes read while waiting, ${polls} polls`).toBe(0);
        // A read again only when the oldest open transaction changed (another database's
        // older one ending: the server's transactions are one xmin).
        expect(asked.gates, JSON.stringify(asked)).toBeGreaterThanOrEqual(polls / 2);
        expect(published).toBe(0);
      } finally {
        await open.query('COMMIT');
        open.release();
      }
      await until(() => published === ROWS + 1, bound(20_000), 'every row published');
      stop.abort();
      await run;
      await relay.close();

      const seen = broker.messages('orders').map((message) => seenOutboxMessage(message.bytes));
      expect(seen.map((message) => message.key)).toEqual([
        'held',
        ...Array.from({ length: ROWS }, (_, i) => `k${i % 5}`),
      ]);
      // Each row's body was read once: the publish's read.
      const bodies = seen.reduce((sum, message) => sum + message.body.length, 0);
      expect(asked.bodyBytes).toBe(bodies);
    },
    bound(120_000),
  );
});
