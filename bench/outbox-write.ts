import pg from 'pg';
import type { OutboxEvent } from '../src/outbox/outbox-event.js';
import { createOutboxTable } from '../src/outbox/outbox-table.js';
import { writeOutbox, writeOutboxAll } from '../src/outbox/outbox-write.js';
import { postgres } from '../src/postgres/index.js';
import { interleavedRounds, median, ratioSpread } from './measure.js';
import { throughput, type CaseResult } from './report.js';

/** Events per transaction measured: one alone, an order's lines, a bulk import. */
const SIZES: readonly number[] = [1, 100, 10_000];
/** The events' keys, `order-0` to `order-99`: a transaction of 100 or more claims all of them. */
const KEYS = 100;
const START = Date.UTC(2026, 0, 1);

export interface OutboxWriteBenchOptions {
  /** Events per round at 100 and 10,000 per transaction. */
  readonly events: number;
  /** Events per round at 1 per transaction (each is a commit: far slower). */
  readonly singleEvents: number;
  readonly repeats: number;
  readonly postgresUrl: string;
}

/** How a side writes a transaction's events. */
type Writer = (client: pg.PoolClient, events: readonly OutboxEvent[], table: string) => unknown;

const SIDES = {
  // What a service without writeOutboxAll does: a round trip per event.
  single: async (client, events, table) => {
    for (const event of events) await writeOutbox(client, event, { table });
  },
  list: (client, events, table) => writeOutboxAll(client, events, { table }),
} satisfies Record<string, Writer>;

/**
 * Case: `writeOutboxAll` against `writeOutbox` called for each event, on PostgreSQL, at 1,
 * 100 and 10,000 events per transaction (JSON bodies of about 54 bytes, keys of 100 orders),
 * one `pg` client, from each transaction's BEGIN to its COMMIT. Interleaved rotating rounds;
 * each side has its outbox table, truncated before each round, so every round writes the same
 * rows and claims the same keys; both sides' tables are checked equal before any timing.
 */
export async function outboxWriteCases(options: OutboxWriteBenchOptions): Promise<CaseResult[]> {
  const pool = new pg.Pool({ connectionString: options.postgresUrl, max: 2 });
  const tables: string[] = [];
  try {
    const client = await pool.connect();
    try {
      const results: CaseResult[] = [];
      for (const size of SIZES) {
        const count = size === 1 ? options.singleEvents : options.events;
        const transactions = transactionsOf(eventsOf(count), size);
        const sides = Object.entries(SIDES).map(([name, write]) => {
          const table = `bench_outbox_write_${process.pid}_${size}_${name}`;
          tables.push(table);
          return { name, table, run: () => timed(client, table, transactions, write) };
        });
        for (const side of sides) {
          await createOutboxTable(postgres(pool), side.table);
          await side.run(); // the check's rows; a warm-up too
        }
        await checkSameTables(client, sides, count, transactions.length);
        const rounds = await interleavedRounds(
          Object.fromEntries(sides.map((side) => [side.name, side.run])),
          options.repeats,
          0,
        );
        const [list, single] = [rounds['list'] ?? [], rounds['single'] ?? []];
        const spread = ratioSpread(list, single);
        results.push({
          name: `outbox-write/${size}-per-transaction`,
          kind: 'outbox-write',
          ...throughput(count, list),
          ratios: { single: spread.median },
          values: {
            singleMin: spread.min,
            singleMax: spread.max,
            listMs: median(list),
            listMsMin: Math.min(...list),
            listMsMax: Math.max(...list),
            singleMs: median(single),
            singleMsMin: Math.min(...single),
            singleMsMax: Math.max(...single),
            events: count,
          },
        });
      }
      return results;
    } finally {
      client.release();
    }
  } finally {
    for (const table of tables) await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_keys`);
    await pool.end();
  }
}

/** `count` events of an order system, with fixed times so that both sides' rows compare equal. */
function eventsOf(count: number): OutboxEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    key: `order-${i % KEYS}`,
    json: { order: i % KEYS, line: i, cents: (i * 37) % 10_000, region: 'north' },
    eventTime: START + i,
  }));
}

function transactionsOf(events: readonly OutboxEvent[], size: number): OutboxEvent[][] {
  const list: OutboxEvent[][] = [];
  for (let i = 0; i < events.length; i += size) list.push(events.slice(i, i + size));
  return list;
}

/** Empties `table`, then writes `transactions` into it with `write`: the ms they took. */
async function timed(
  client: pg.PoolClient,
  table: string,
  transactions: readonly (readonly OutboxEvent[])[],
  write: Writer,
): Promise<number> {
  await client.query(`TRUNCATE ${table}, ${table}_keys`);
  const started = performance.now();
  for (const events of transactions) {
    await client.query('BEGIN');
    await write(client, events, table);
    await client.query('COMMIT');
  }
  return performance.now() - started;
}

/**
 * Throws unless every side's table holds `count` rows in `transactions` transactions, the
 * same rows (key, time, headers, content type, body, in id order) and the same keys claimed.
 */
async function checkSameTables(
  client: pg.PoolClient,
  sides: readonly { name: string; table: string }[],
  count: number,
  transactions: number,
): Promise<void> {
  let expected: string | undefined;
  for (const { name, table } of sides) {
    const { rows } = await client.query<{ rows: number; txids: number; text: string }>(
      'SELECT count(*)::int AS rows, count(DISTINCT txid)::int AS txids, ' +
        "json_agg(json_build_array(key, event_time, headers, content_type, encode(body, 'hex')) " +
        `ORDER BY id)::text || (SELECT json_agg(key ORDER BY key)::text FROM ${table}_keys) ` +
        `AS text FROM ${table}`,
    );
    const found = rows[0];
    expected ??= found?.text;
    if (found?.rows !== count || found.txids !== transactions || found.text !== expected) {
      throw new Error(
        `outbox-write bench (${count} events, ${transactions} transactions): the ${name} ` +
          `side's table holds ${found?.rows} rows in ${found?.txids} transactions, or differs ` +
          `from the ${sides[0]?.name} side's`,
      );
    }
  }
}
