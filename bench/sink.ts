import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { jsonMessage } from '../src/codecs/source-message.js';
import { aggregate } from '../src/dsl/pipeline.js';
import { decodeResult } from '../src/result-format/result-decoder.js';
import { MemoryBroker } from '../src/memory/broker.js';
import { pglite } from '../src/pglite/index.js';
import { postgres } from '../src/postgres/index.js';
import { databaseSink, type SinkRunSummary } from '../src/sink/database-sink.js';
import type { SinkDatabase } from '../src/database/sink-database.js';
import { windowOutputs } from '../src/sink/window-outputs.js';
import { cpuMsOf } from './broker-cpu.js';
import { cpuClock, interleavedRounds, median, perSecond, ratioSpread } from './measure.js';
import { copyIn } from './pg-copy-in.js';
import { plainLoop, PLAINS, type Plain, type PlainLoop, type Row } from './plain-upserts.js';
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

/** What a sink side runs: this tree's library, or an older copy's (bench/ab-sink.ts). */
export interface SinkLibrary {
  readonly databaseSink: typeof databaseSink;
  readonly windowOutputs: typeof windowOutputs;
  readonly postgres: typeof postgres;
  readonly pglite: typeof pglite;
}

export const THIS_TREE: SinkLibrary = { databaseSink, windowOutputs, postgres, pglite };

/** A database every side writes to: the sink through its adapter, the plain loops by hand. */
export interface BenchDatabase {
  readonly name: string;
  /** The database as `library`'s adapter gives it to a sink. */
  readonly sinkDatabase: (library: SinkLibrary) => SinkDatabase;
  /**
   * Runs `loop.before`, then each batch's statements in a transaction of its own, in order, on
   * one connection, without any checkpoint.
   */
  readonly plainLoop: (loop: PlainLoop, batches: Iterable<readonly Row[]>) => Promise<void>;
  readonly query: (sql: string) => Promise<readonly Record<string, unknown>[]>;
  /**
   * CPU ms used so far by this process and by the database's own processes serving it:
   * PostgreSQL's backends of the bench's connections (their utime + stime from /proc); PGlite
   * runs in this process.
   */
  readonly cpuMs: () => number;
  readonly close: () => Promise<void>;
}

/** What one round of a side cost: wall time, and CPU time of this process and the database's. */
export interface RoundCost {
  readonly wallMs: number;
  readonly cpuMs: number;
}

/** The sides of the case: the sink, and each plain loop. */
export type Side = 'sink' | Plain;
const SIDES: readonly Side[] = ['sink', ...PLAINS];

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
 * messages per transaction, against three hand-written loops over the same result messages
 * (held in memory, not read from the broker) that decode them with `decodeResult` and upsert
 * them in transactions of the same sizes, without a checkpoint: multi-row VALUES, unnest
 * arrays, and COPY into a temporary table (`bench/plain-upserts.ts`). Into PostgreSQL and
 * into PGlite, in interleaved rotating rounds; the tables are truncated before each round, so
 * every round inserts the same rows. Every table is checked equal to the sink's before any
 * timing. Rows per second by wall time (what a user waits for), and CPU time per row of this
 * process and the database's processes (steadier on a shared machine); the sink's ratio to the
 * best plain loop by each.
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
        const tasks: Record<string, () => Promise<RoundCost>> = {};
        for (const side of sides) {
          await side.create();
          await side.checkSameTables(); // before anything is timed; the warm-up too
          for (const name of SIDES) tasks[`${name}-${side.size}`] = side.runs[name];
        }
        const rounds = await interleavedRounds(tasks, options.repeats, 0);
        results.push(
          ...sides.map((side) =>
            sinkResult(database.name, side, (name) => rounds[`${name}-${side.size}`] ?? []),
          ),
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

/**
 * The sink's rows/s at one size, its ratio to each plain loop and to the best (`best`: the
 * plain loop of the highest median rows/s), each with the min–max of its per-round ratios
 * (`<ratio>Min`, `<ratio>Max`), and by CPU per row (`bestByCpu`: to the plain loop of the
 * least CPU per row).
 */
function sinkResult(
  database: string,
  side: SinkSides,
  roundsOf: (name: Side) => readonly RoundCost[],
): CaseResult {
  const wall = (name: Side): number[] => roundsOf(name).map((round) => round.wallMs);
  const cpu = (name: Side): number[] => roundsOf(name).map((round) => round.cpuMs);
  const least = (of: (name: Side) => number[]): Plain =>
    PLAINS.reduce((best, plain) => (median(of(plain)) < median(of(best)) ? plain : best));
  const best = least(wall);
  const bestByCpu = least(cpu);
  const byWall = ratioSpread(wall('sink'), wall(best));
  const byCpu = ratioSpread(cpu('sink'), cpu(bestByCpu));
  const usPerRow = (name: Side): number => (median(cpu(name)) * 1000) / side.messages;
  const ratios: Record<string, number> = { best: byWall.median };
  const values: Record<string, number> = {
    bestMin: byWall.min,
    bestMax: byWall.max,
    bestByCpu: byCpu.median,
    bestByCpuMin: byCpu.min,
    bestByCpuMax: byCpu.max,
    cpuUsPerRow: usPerRow('sink'),
  };
  for (const plain of PLAINS) {
    const to = ratioSpread(wall('sink'), wall(plain));
    ratios[plain] = to.median;
    values[`${plain}Min`] = to.min;
    values[`${plain}Max`] = to.max;
    values[`${plain}RowsPerSec`] = perSecond(side.messages, median(wall(plain)));
    values[`${plain}CpuUsPerRow`] = usPerRow(plain);
  }
  values.rows = side.messages;
  return {
    name: `sink/${database}/${side.size}-per-transaction`,
    kind: 'sink',
    ...throughput(side.messages, wall('sink')),
    ratios,
    values,
    notes: [`the best plain loop: ${best} by rows/s, ${bestByCpu} by CPU per row`],
  };
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

/** The sides at one batch size: each run truncates its table and times itself. */
export interface SinkSides {
  readonly size: number;
  readonly messages: number;
  create(): Promise<void>;
  /** Runs every side once and throws unless their tables are equal, `messages` rows each. */
  checkSameTables(): Promise<void>;
  readonly runs: Readonly<Record<Side, () => Promise<RoundCost>>>;
  drop(): Promise<void>;
}

let sidesMade = 0;

export function sinkSides(
  database: BenchDatabase,
  source: BenchSource,
  size: number,
  messages: number,
  library = THIS_TREE,
): SinkSides {
  const sinkDatabase = database.sinkDatabase(library);
  const suffix = `${process.pid}_${++sidesMade}`;
  const checkpoints = `bench_sink_checkpoints_${suffix}`;
  const tables: Record<Side, string> = {
    sink: `bench_sink_${suffix}`,
    values: `bench_values_${suffix}`,
    unnest: `bench_unnest_${suffix}`,
    copy: `bench_copy_${suffix}`,
  };
  const plainBatches = batches(source.results.slice(0, messages), size);
  // What a hand-written loop does with each batch: decode the results, then its statements.
  function* decoded(): Generator<Row[]> {
    for (const batch of plainBatches) yield batch.flatMap(rowsOf);
  }
  const timed = async (work: () => Promise<void>): Promise<RoundCost> => {
    const cpu = database.cpuMs();
    const started = performance.now();
    await work();
    return { wallMs: performance.now() - started, cpuMs: database.cpuMs() - cpu };
  };
  let sinkRuns = 0;
  const runSink = async (): Promise<RoundCost> => {
    await database.query(`TRUNCATE ${tables.sink}`);
    const sink = library.databaseSink({
      name: `bench-${++sinkRuns}`, // a checkpoint row of its own: every run starts afresh
      source: source.broker.source(`results-${messages}`),
      database: sinkDatabase,
      into: library.windowOutputs<number>({ table: tables.sink }),
      maxBatchMessages: size,
      checkpointTable: checkpoints,
    });
    let summary: SinkRunSummary | undefined;
    const cost = await timed(async () => {
      summary = await sink.run({ untilCaughtUp: true });
    });
    if (summary?.applied !== messages || summary.transactions !== Math.ceil(messages / size)) {
      throw new Error(
        `sink bench: the sink applied ${summary?.applied} messages in ${summary?.transactions} ` +
          `transactions, not ${messages} in ${Math.ceil(messages / size)}`,
      );
    }
    return cost;
  };
  const runPlain = (plain: Plain) => async (): Promise<RoundCost> => {
    await database.query(`TRUNCATE ${tables[plain]}`);
    const loop = plainLoop(plain, tables[plain]);
    return timed(() => database.plainLoop(loop, decoded()));
  };
  const runs: Record<Side, () => Promise<RoundCost>> = {
    sink: runSink,
    values: runPlain('values'),
    unnest: runPlain('unnest'),
    copy: runPlain('copy'),
  };
  return {
    size,
    messages,
    runs,
    async create() {
      for (const table of Object.values(tables)) {
        await database.query(
          `CREATE TABLE ${table} (key text NOT NULL, window_start timestamptz NOT NULL, ` +
            'window_end timestamptz NOT NULL, count integer NOT NULL, value bigint NOT NULL, ' +
            'PRIMARY KEY (key, window_start))',
        );
      }
    },
    async checkSameTables() {
      for (const side of SIDES) await runs[side]();
      const sunk = await tableText(database, tables.sink);
      for (const plain of PLAINS) {
        const plainTable = await tableText(database, tables[plain]);
        if (sunk.rows !== messages || sunk.text !== plainTable.text) {
          throw new Error(
            `sink bench (${database.name}, ${size} per transaction): the sink's table ` +
              `(${sunk.rows} rows) differs from the ${plain} loop's (${plainTable.rows} rows)`,
          );
        }
      }
    },
    async drop() {
      for (const table of [...Object.values(tables), checkpoints]) {
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

/** A table as text in a fixed order, to compare the sides' tables. */
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
  // Idle connections are kept: a backend that exits takes its CPU figure with it.
  const pool = new pg.Pool({ connectionString: url, max: 2, idleTimeoutMillis: 0 });
  const backends = new Set<number>();
  pool.on('connect', (client) => {
    backends.add((client as unknown as { processID: number }).processID);
  });
  const lastTicks = new Map<number, number>();
  return {
    name: 'postgres',
    sinkDatabase: (library) => library.postgres(pool),
    async plainLoop(loop, batches) {
      const client = await pool.connect();
      try {
        for (const sql of loop.before) await client.query(sql);
        for (const rows of batches) {
          await client.query('BEGIN');
          for (const statement of loop.transaction(rows)) {
            if ('copyInto' in statement) {
              const { copyInto, columns, text } = statement;
              await copyIn(client, `COPY ${copyInto} (${columns.join(', ')}) FROM STDIN`, text);
            } else {
              await client.query(statement.sql, [...statement.params]);
            }
          }
          await client.query('COMMIT');
        }
      } finally {
        client.release();
      }
    },
    query: async (sql) => (await pool.query(sql)).rows as Record<string, unknown>[],
    cpuMs: () => cpuClock() + cpuMsOf(backends, lastTicks),
    close: () => pool.end(),
  };
}

export async function pgliteDatabase(): Promise<BenchDatabase> {
  const db = new PGlite();
  await db.waitReady;
  return {
    name: 'pglite',
    sinkDatabase: (library) => library.pglite(db),
    async plainLoop(loop, batches) {
      for (const sql of loop.before) await db.query(sql);
      for (const rows of batches) {
        await db.transaction(async (tx) => {
          for (const statement of loop.transaction(rows)) {
            if ('copyInto' in statement) {
              const { copyInto, columns, text } = statement;
              await tx.query(`COPY ${copyInto} (${columns.join(', ')}) FROM '/dev/blob'`, [], {
                blob: new Blob([text]),
              });
            } else {
              await tx.query(statement.sql, [...statement.params]);
            }
          }
        });
      }
    },
    query: async (sql) => (await db.query<Record<string, unknown>>(sql)).rows,
    cpuMs: cpuClock,
    close: () => db.close(),
  };
}
