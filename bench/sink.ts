import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { jsonMessage } from '../src/codecs/source-message.js';
import { aggregate } from '../src/dsl/pipeline.js';
import { decodeResult } from '../src/result-format/result-decoder.js';
import { MemoryBroker } from '../src/memory/broker.js';
import { pglite } from '../src/pglite/index.js';
import { postgres } from '../src/postgres/index.js';
import { databaseSink } from '../src/sink/database-sink.js';
import type { SinkDatabase } from '../src/database/sink-database.js';
import { windowOutputs } from '../src/sink/window-outputs.js';
import { interleavedRounds, median, perSecond, ratioSpread } from './measure.js';
import { throughput, type CaseResult } from './report.js';

/** Messages per transaction measured, the three. */
const SINK_BATCH_SIZES: readonly number[] = [1, 100, 1_000];
const CUSTOMERS = 100;
const HOUR = 3_600_000;
const START = Date.UTC(2026, 0, 1);
/** Results are re-appended in chunks of this many, as a broker would store a job's target. */
const CHUNK = 1_000;

/** Why the sink case cannot run here, or undefined when it can. */
export function sinkUnavailable(): string | undefined {
  const url = process.env.POSTGRES_URL;
  return url === undefined || url === ''
    ? 'it needs POSTGRES_URL (scripts/postgres.sh start prints one)'
    : undefined;
}

/** One window output as a row of the table both sides write. */
interface Row {
  readonly value: number;
  readonly key: string;
  readonly window_start: Date;
  readonly window_end: Date;
  readonly count: number;
}

/** A database both sides write to: the sink through its adapter, the plain loop by hand. */
export interface BenchDatabase {
  readonly name: string;
  readonly sink: SinkDatabase;
  /** Sends each statement in a transaction of its own, in order, without any checkpoint. */
  readonly plainLoop: (transactions: Iterable<Statement>) => Promise<void>;
  readonly query: (sql: string) => Promise<readonly Record<string, unknown>[]>;
  readonly close: () => Promise<void>;
}

interface Statement {
  readonly sql: string;
  readonly params: readonly unknown[];
}

export interface SinkBenchOptions {
  /** Rows per round at every size but 1 message per transaction. */
  readonly messages: number;
  /** Rows per round at 1 message per transaction (each is a commit: far slower). */
  readonly singleMessages: number;
  readonly repeats: number;
  /** PostgreSQL's URL; without it, only PGlite is measured. */
  readonly postgresUrl?: string | undefined;
  /** Messages per transaction (default 1, 100 and 1,000). */
  readonly sizes?: readonly number[];
}

/**
 * Case: a job's results (one window output per message: hourly totals of 100 customers) on
 * the embedded broker, applied by `databaseSink` with `windowOutputs` at 1, 100 and 1,000
 * messages per transaction, against a hand-written loop over the same result messages (held
 * in memory, not read from the broker) that decodes them with `decodeResult` and sends the same
 * upsert statement in transactions of the same sizes, without a checkpoint. Into PostgreSQL and into PGlite, each against its own loop,
 * in interleaved rotating rounds; the tables are truncated before each round, so every round
 * inserts the same rows. Both sides' tables are checked equal before any timing. Wall time:
 * the database works in another process (PostgreSQL) or on this thread (PGlite), and rows per
 * second is what a user waits for.
 */
export async function sinkCases(options: SinkBenchOptions): Promise<CaseResult[]> {
  const sizes = options.sizes ?? SINK_BATCH_SIZES;
  const source = await benchSource(sizes.map((size) => messagesAt(size, options)));
  const databases: BenchDatabase[] = [];
  try {
    if (options.postgresUrl !== undefined) databases.push(postgresDatabase(options.postgresUrl));
    databases.push(await pgliteDatabase());
    const results: CaseResult[] = [];
    for (const database of databases) {
      const sides = sizes.map((size) =>
        sinkSides(database, source, size, messagesAt(size, options)),
      );
      try {
        const tasks: Record<string, () => Promise<number>> = {};
        for (const side of sides) {
          await side.create();
          await side.checkSameTables(); // before anything is timed; the warm-up too
          tasks[`sink-${side.size}`] = side.runSink;
          tasks[`plain-${side.size}`] = side.runPlain;
        }
        const rounds = await interleavedRounds(tasks, options.repeats, 0);
        results.push(
          ...sides.map((side): CaseResult => {
            const sinkRounds = rounds[`sink-${side.size}`] ?? [];
            const plainRounds = rounds[`plain-${side.size}`] ?? [];
            const spread = ratioSpread(sinkRounds, plainRounds);
            return {
              name: `sink/${database.name}/${side.size}-per-transaction`,
              kind: 'sink',
              ...throughput(side.messages, sinkRounds),
              ratios: { plain: spread.median },
              values: {
                plainMin: spread.min,
                plainMax: spread.max,
                plainRowsPerSec: perSecond(side.messages, median(plainRounds)),
                rows: side.messages,
              },
            };
          }),
        );
      } finally {
        for (const side of sides) await side.drop();
      }
    }
    return results;
  } finally {
    for (const database of databases) await database.close();
  }
}

/** A job's results on the embedded broker, and their bytes in offset order. */
export interface BenchSource {
  readonly broker: MemoryBroker;
  readonly results: readonly Uint8Array[];
}

/** Results enough for each of `messages`, each count in a stream 'results-<count>' of its own. */
export async function benchSource(messages: readonly number[]): Promise<BenchSource> {
  const broker = await resultsBroker(Math.max(...messages));
  for (const count of new Set(messages)) sourceOf(broker, count);
  return { broker, results: broker.messages('results').map(({ bytes }) => bytes) };
}

/** The two sides at one batch size: each run truncates its table and times itself. */
export interface SinkSides {
  readonly size: number;
  readonly messages: number;
  create(): Promise<void>;
  /** Runs both sides once and throws unless their tables are equal, `messages` rows each. */
  checkSameTables(): Promise<void>;
  readonly runSink: () => Promise<number>;
  readonly runPlain: () => Promise<number>;
  drop(): Promise<void>;
}

let sidesMade = 0;

export function sinkSides(
  database: BenchDatabase,
  source: BenchSource,
  size: number,
  messages: number,
): SinkSides {
  const suffix = `${process.pid}_${++sidesMade}`;
  const checkpoints = `bench_sink_checkpoints_${suffix}`;
  const sinkTable = `bench_sink_${suffix}`;
  const plainTable = `bench_plain_${suffix}`;
  const plainBatches = batches(source.results.slice(0, messages), size);
  // What a hand-written loop does with each batch: decode the results, one upsert statement.
  function* statements(): Generator<Statement> {
    for (const batch of plainBatches) yield upsert(plainTable, batch.flatMap(rowsOf));
  }
  let sinkRuns = 0;
  const runSink = async (): Promise<number> => {
    await database.query(`TRUNCATE ${sinkTable}`);
    const sink = databaseSink({
      name: `bench-${++sinkRuns}`, // a checkpoint row of its own: every run starts afresh
      source: source.broker.source(`results-${messages}`),
      database: database.sink,
      into: windowOutputs<number>({ table: sinkTable }),
      maxBatchMessages: size,
      checkpointTable: checkpoints,
    });
    const started = performance.now();
    const summary = await sink.run({ untilCaughtUp: true });
    const ms = performance.now() - started;
    if (summary.applied !== messages || summary.transactions !== Math.ceil(messages / size)) {
      throw new Error(
        `sink bench: the sink applied ${summary.applied} messages in ${summary.transactions} ` +
          `transactions, not ${messages} in ${Math.ceil(messages / size)}`,
      );
    }
    return ms;
  };
  const runPlain = async (): Promise<number> => {
    await database.query(`TRUNCATE ${plainTable}`);
    const started = performance.now();
    await database.plainLoop(statements());
    return performance.now() - started;
  };
  return {
    size,
    messages,
    runSink,
    runPlain,
    async create() {
      for (const table of [sinkTable, plainTable]) {
        await database.query(
          `CREATE TABLE ${table} (key text NOT NULL, window_start timestamptz NOT NULL, ` +
            'window_end timestamptz NOT NULL, count integer NOT NULL, value bigint NOT NULL, ' +
            'PRIMARY KEY (key, window_start))',
        );
      }
    },
    async checkSameTables() {
      await runSink();
      await runPlain();
      const sunk = await tableText(database, sinkTable);
      const plain = await tableText(database, plainTable);
      if (sunk.rows !== messages || sunk.text !== plain.text) {
        throw new Error(
          `sink bench (${database.name}, ${size} per transaction): the sink's table ` +
            `(${sunk.rows} rows) differs from the plain loop's (${plain.rows} rows)`,
        );
      }
    },
    async drop() {
      for (const table of [sinkTable, plainTable, checkpoints]) {
        await database.query(`DROP TABLE IF EXISTS ${table}`);
      }
    },
  };
}

/**
 * The embedded broker with `results` of a job in 'results': readings of one customer per hour
 * (customer i % 100), totalled per customer per hour, so each result carries one output.
 */
async function resultsBroker(results: number): Promise<MemoryBroker> {
  const broker = new MemoryBroker({ now: () => START });
  broker.createStream('readings');
  broker.createStream('results');
  // One reading more than results: the last window stays open.
  for (let i = 0; i <= results; i += CHUNK) {
    const chunk: Uint8Array[] = [];
    for (let j = i; j <= Math.min(results, i + CHUNK - 1); j++) {
      const t = START + j * HOUR;
      chunk.push(
        jsonMessage(
          { customer: `customer-${j % CUSTOMERS}`, cents: j * 7, t },
          { creationTime: t },
        ),
      );
    }
    broker.append('readings', chunk);
  }
  await aggregate<{ customer: string; cents: number; t: number }>(broker.source('readings'))
    .tumbling('1h')
    .key((reading) => reading.customer)
    .reduce((total, reading) => total + reading.cents, 0)
    .to(broker.target('results', { producer: 'bench' }))
    .run({ untilCaughtUp: true });
  const published = broker.messages('results').length;
  if (published !== results) {
    throw new Error(`sink bench: the job published ${published} results, not ${results}`);
  }
  return broker;
}

/** 'results-<messages>': the first `messages` results, in chunks of 1,000. */
function sourceOf(broker: MemoryBroker, messages: number): void {
  const stream = `results-${messages}`;
  broker.createStream(stream);
  const results = broker.messages('results').slice(0, messages);
  for (let i = 0; i < results.length; i += CHUNK) {
    broker.append(
      stream,
      results.slice(i, i + CHUNK).map(({ bytes }) => bytes),
    );
  }
}

function messagesAt(size: number, options: SinkBenchOptions): number {
  return size === 1 ? options.singleMessages : options.messages;
}

function rowsOf(bytes: Uint8Array): Row[] {
  return decodeResult<number>(bytes).outputs.map((output) => ({
    value: output.value,
    key: String(output.key),
    window_start: new Date(output.start),
    window_end: new Date(output.end),
    count: output.count,
  }));
}

function batches<T>(items: readonly T[], size: number): T[][] {
  const list: T[][] = [];
  for (let i = 0; i < items.length; i += size) list.push(items.slice(i, i + size));
  return list;
}

/** The statement a hand-written loop would send: one multi-row upsert per transaction. */
function upsert(table: string, rows: readonly Row[]): Statement {
  const params: unknown[] = [];
  const values = rows.map(
    (row) =>
      `($${params.push(row.value)}, $${params.push(row.key)}, $${params.push(row.window_start)}, ` +
      `$${params.push(row.window_end)}, $${params.push(row.count)})`,
  );
  return {
    sql:
      `INSERT INTO ${table} (value, key, window_start, window_end, count) VALUES ${values.join(', ')} ` +
      'ON CONFLICT (key, window_start) DO UPDATE SET value = EXCLUDED.value, ' +
      'window_end = EXCLUDED.window_end, count = EXCLUDED.count',
    params,
  };
}

/** A table as text in a fixed order, to compare the two sides' tables. */
async function tableText(
  database: BenchDatabase,
  table: string,
): Promise<{ rows: number; text: string }> {
  const rows = await database.query(
    `SELECT key, (extract(epoch FROM window_start) * 1000)::bigint::text AS s, ` +
      `(extract(epoch FROM window_end) * 1000)::bigint::text AS e, count, value::text AS v ` +
      `FROM ${table} ORDER BY key, window_start`,
  );
  return { rows: rows.length, text: JSON.stringify(rows) };
}

export function postgresDatabase(url: string): BenchDatabase {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    name: 'postgres',
    sink: postgres(pool),
    async plainLoop(transactions) {
      const client = await pool.connect();
      try {
        for (const { sql, params } of transactions) {
          await client.query('BEGIN');
          await client.query(sql, [...params]);
          await client.query('COMMIT');
        }
      } finally {
        client.release();
      }
    },
    query: async (sql) => (await pool.query(sql)).rows as Record<string, unknown>[],
    close: () => pool.end(),
  };
}

export async function pgliteDatabase(): Promise<BenchDatabase> {
  const db = new PGlite();
  await db.waitReady;
  return {
    name: 'pglite',
    sink: pglite(db),
    async plainLoop(transactions) {
      for (const { sql, params } of transactions) {
        await db.transaction(async (tx) => {
          await tx.query(sql, [...params]);
        });
      }
    },
    query: async (sql) => (await db.query<Record<string, unknown>>(sql)).rows,
    close: () => db.close(),
  };
}
