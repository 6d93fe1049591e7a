import pg from 'pg';
import { Registry } from 'prom-client';
import { connect as connectStock } from 'rabbitmq-stream-js-client';
import { relayMetrics } from '../src/metrics/relay-metrics.js';
import { outboxRelay } from '../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../src/outbox/outbox-table.js';
import { postgres } from '../src/postgres/index.js';
import { connect, parseStreamUrl, type RabbitMQ } from '../src/rabbitmq/index.js';
import { e2eUnavailable } from './e2e.js';
import {
  cpuClock,
  interleavedRounds,
  median,
  percentile,
  perSecond,
  ratioSpread,
  spreadOf,
} from './measure.js';
import { PlainLoop } from './outbox-plain-loop.js';
import type { Round } from './outbox-round.js';
import { WriterProcess } from './outbox-writer-process.js';
import { MAX_WRITERS, nowMs, type WriteRequest, type Written } from './outbox-writers.js';
import { ratioRange, throughput, type CaseResult } from './report.js';
import { sinkUnavailable } from './sink.js';

/** Concurrent writers and rows per transaction measured: the issue's. */
const WRITERS: readonly number[] = [1, MAX_WRITERS];
const ROWS_PER_TRANSACTION: readonly number[] = [1, 100, 1_000];

/** Why the outbox case cannot run here, or undefined when it can. */
export function outboxUnavailable(): string | undefined {
  return sinkUnavailable() ?? e2eUnavailable();
}

export interface OutboxBenchOptions {
  /** Rows a round at 100 and 1,000 rows per transaction. */
  readonly rows: number;
  /** Rows a round at 1 row per transaction (each a commit: far slower to write). */
  readonly singleRows: number;
  readonly repeats: number;
  readonly postgresUrl: string;
  readonly rabbitUrl: string;
  /** The (writers, rows per transaction) pairs; default every pair of 1 and 8 by 1, 100, 1,000. */
  readonly shapes?: readonly { readonly writers: number; readonly rowsPerTransaction: number }[];
}

/**
 * Case: rows relayed from PostgreSQL into a RabbitMQ stream while writers commit them, by
 * `outboxRelay` against a plain hand-written loop (select the unpublished rows in id order,
 * publish them with the stock client's producer, wait for the confirms, UPDATE them as
 * published: the usual at-least-once relay), with 1 and 8 concurrent writers and 1, 100 and
 * 1,000 rows per transaction, in interleaved rotating rounds. The writers run in a child process
 * (./outbox-writers-child.ts) and start once the side is running, so each side's CPU time is
 * its own. Both read 500 rows at a time and sleep 100 ms when idle (the relay's defaults).
 * The relay's waits behind open transactions are counted with `relayMetrics`, and those behind
 * a transaction none of the writers ran: the gate is the server's oldest open transaction, so
 * another database's (a test suite's on a shared server) holds the relay back too.
 */
export async function outboxCases(options: OutboxBenchOptions): Promise<CaseResult[]> {
  const shapes =
    options.shapes ??
    WRITERS.flatMap((writers) =>
      ROWS_PER_TRANSACTION.map((rowsPerTransaction) => ({ writers, rowsPerTransaction })),
    );
  const suffix = String(process.pid);
  const outboxTable = `bench_outbox_${suffix}`;
  const plainTable = `bench_plain_outbox_${suffix}`;
  const relayStream = `bench-outbox-relay-${suffix}`;
  const plainStream = `bench-outbox-plain-${suffix}`;
  const pool = new pg.Pool({ connectionString: options.postgresUrl, max: 4 });
  const rabbit = await connect(options.rabbitUrl);
  const stock = await connectStock(parseStreamUrl(options.rabbitUrl));
  const writers = await WriterProcess.start(options.postgresUrl);
  try {
    await createOutboxTable(postgres(pool), outboxTable);
    await pool.query(
      `CREATE TABLE ${plainTable} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, ` +
        'key text NOT NULL, headers jsonb, content_type text NOT NULL, body bytea NOT NULL, ' +
        'published boolean NOT NULL DEFAULT false)',
    );
    await pool.query(
      `CREATE INDEX ${plainTable}_unpublished ON ${plainTable} (id) WHERE NOT published`,
    );
    await rabbit.createStream(relayStream);
    await rabbit.createStream(plainStream);
    const plain = await PlainLoop.start(stock, plainStream, pool, plainTable);
    const results: CaseResult[] = [];
    let relays = 0;
    for (const { writers: count, rowsPerTransaction } of shapes) {
      const rows = rowsPerTransaction === 1 ? options.singleRows : options.rows;
      const request = (kind: WriteRequest['kind'], table: string): WriteRequest => ({
        type: 'write',
        kind,
        table,
        writers: count,
        rowsPerTransaction,
        rows,
      });
      const rounds = await interleavedRounds(
        {
          relay: async () => {
            await pool.query(`TRUNCATE ${outboxTable}, ${outboxTable}_keys`);
            // A name of its own each round: the truncated table no longer holds the last one's rows.
            const name = `bench-relay-${++relays}`;
            return relayRound(pool, rabbit, name, outboxTable, relayStream, rows, () =>
              writers.write(request('outbox', outboxTable)),
            );
          },
          plain: async () => {
            await pool.query(`TRUNCATE ${plainTable}`);
            return plain.round(rows, () => writers.write(request('plain', plainTable)));
          },
        },
        options.repeats,
      );
      results.push(outboxResult(count, rowsPerTransaction, rows, rounds.relay, rounds.plain));
    }
    return results;
  } finally {
    await writers.stop();
    // The stock client first, its producer's stream still there: closing a producer whose
    // stream was deleted under it can wait for ever for an answer that never comes.
    await stock.close();
    await pool.query(`DROP TABLE IF EXISTS ${outboxTable}, ${outboxTable}_keys, ${plainTable}`);
    await pool.end();
    for (const stream of [relayStream, plainStream]) {
      await rabbit.deleteStream(stream).catch(() => undefined);
    }
    await rabbit.close();
  }
}

/** One case's line: the relay's rows per second, its ratio to the plain loop, CPU and latency. */
function outboxResult(
  writers: number,
  rowsPerTransaction: number,
  rows: number,
  relay: readonly Round[],
  plain: readonly Round[],
): CaseResult {
  const wall = (rounds: readonly Round[]) => rounds.map((round) => round.wallMs);
  const cpuUsPerRow = (rounds: readonly Round[]) =>
    rounds.map((round) => (round.cpuMs * 1000) / rows);
  const spread = ratioSpread(wall(relay), wall(plain));
  const relayCpu = spreadOf(cpuUsPerRow(relay));
  const plainCpu = spreadOf(cpuUsPerRow(plain));
  const cpuRatios = cpuUsPerRow(relay).map((cpu, i) => cpu / (cpuUsPerRow(plain)[i] ?? NaN));
  const latency = (rounds: readonly Round[]) => rounds.flatMap((round) => round.latenciesMs);
  const p99s = relay.map((round) => percentile(round.latenciesMs, 0.99));
  return {
    name: `outbox/${writers}-writers/${rowsPerTransaction}-per-transaction`,
    kind: 'outbox',
    ...throughput(rows, wall(relay)),
    ratios: { plain: spread.median },
    values: {
      ...ratioRange('plain', spread),
      plainRowsPerSec: perSecond(rows, median(wall(plain))),
      cpuUsPerRow: relayCpu.median,
      cpuUsPerRowMin: relayCpu.min,
      cpuUsPerRowMax: relayCpu.max,
      plainCpuUsPerRow: plainCpu.median,
      cpuOverPlain: relayCpu.median / plainCpu.median,
      cpuOverPlainMin: Math.min(...cpuRatios),
      cpuOverPlainMax: Math.max(...cpuRatios),
      latencyP50Ms: percentile(latency(relay), 0.5),
      latencyP99Ms: percentile(latency(relay), 0.99),
      latencyP99MsMin: Math.min(...p99s),
      latencyP99MsMax: Math.max(...p99s),
      plainLatencyP50Ms: percentile(latency(plain), 0.5),
      plainLatencyP99Ms: percentile(latency(plain), 0.99),
      writeRowsPerSec: perSecond(rows, median(relay.map((round) => round.writeMs))),
      plainWriteRowsPerSec: perSecond(rows, median(plain.map((round) => round.writeMs))),
      waits: median(relay.map((round) => round.waits)),
      foreignWaits: median(relay.map((round) => round.foreignWaits)),
      waitedShareOfWall: median(relay.map((round) => round.waitedMs / round.wallMs)),
      rows,
    },
  };
}

/**
 * One relay round: a fresh relay of `name` runs until the `rows` rows the writers commit are
 * confirmed. Its confirm times come from its `published` events, each row's place in them from
 * the table read afterwards in the relay's order (transaction id, then row id).
 */
async function relayRound(
  pool: pg.Pool,
  rabbit: RabbitMQ,
  name: string,
  table: string,
  stream: string,
  rows: number,
  write: () => Promise<Written>,
): Promise<Round> {
  const relay = outboxRelay({ name, database: postgres(pool), table, broker: rabbit, to: stream });
  // Its waits as an operator sees them, and the transactions it waited for.
  const registry = new Registry();
  const metrics = relayMetrics(relay, { registry });
  const openTransactions: bigint[] = [];
  relay.on('waiting', (event) => openTransactions.push(event.openTransaction));
  const confirms: { rows: number; at: number }[] = [];
  let published = 0;
  let allConfirmed!: () => void;
  const confirmed = new Promise<void>((resolve) => (allConfirmed = resolve));
  relay.on('published', (event) => {
    confirms.push({ rows: event.rows, at: nowMs() });
    published += event.rows;
    if (published >= rows) allConfirmed();
  });
  const started = new Promise<void>((resolve) => relay.on('started', () => resolve()));
  const stop = new AbortController();
  const run = relay.run({ signal: stop.signal });
  const stopped = stoppedEarly(run, `relay '${name}'`);
  try {
    await Promise.race([started, stopped]);
    const cpu = cpuClock();
    const writing = write();
    // Every row confirmed; or the relay stopped, or the writers failed.
    await Promise.race([confirmed, stopped, writing.then(() => confirmed)]);
    const cpuMs = cpuClock() - cpu;
    const written = await writing;
    const counter = async (metric: string): Promise<number> =>
      (await registry.getSingleMetric(`stream_windows_relay_${metric}`)?.get())?.values[0]?.value ??
      Number.NaN;
    const waits = await counter('waits_total');
    const waitedMs = (await counter('wait_seconds_total')) * 1000;
    const { rows: order } = await pool.query<{ tag: string; txid: string }>(
      `SELECT headers->>'bench-tx' AS tag, txid::text AS txid FROM ${table} ORDER BY txid, id`,
    );
    const ours = new Set(order.map((row) => BigInt(row.txid)));
    const committedAt = new Map(written.commits);
    const latenciesMs: number[] = [];
    let row = 0;
    for (const batch of confirms) {
      for (let i = 0; i < batch.rows; i++) {
        const tag = order[row++]?.tag ?? '';
        latenciesMs.push(batch.at - (committedAt.get(tag) ?? Number.NaN));
      }
    }
    return {
      wallMs: (confirms.at(-1)?.at ?? Number.NaN) - written.startedAt,
      cpuMs,
      writeMs: written.endedAt - written.startedAt,
      latenciesMs,
      waits,
      foreignWaits: openTransactions.filter((txid) => !ours.has(txid)).length,
      waitedMs,
    };
  } finally {
    stop.abort();
    await run;
    metrics.close();
    await relay.close();
  }
}

/** Rejects when `run` ends, as a run that ends before its rows are confirmed is a failure. */
function stoppedEarly(run: Promise<unknown>, what: string): Promise<never> {
  const stopped = run.then(() => Promise.reject(new Error(`${what} stopped before its rows`)));
  stopped.catch(() => undefined); // raced, and left unsettled-for once the round is over
  return stopped;
}
