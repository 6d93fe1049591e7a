// The orders example's chain after the writers, one definition for every process that runs a
// part of it: the outbox relay (orders table's outbox -> the orders stream), the job (revenue
// per region per hour, in event time) and the database sink (the job's results -> the revenue
// table). Each is named, so that a restart, in this process or another, resumes where the
// last one left off: the relay and the job from their producer's last publishing id on the
// stream, the sink from its checkpoint row.
import {
  aggregate,
  databaseSink,
  outboxRelay,
  windowOutputs,
  type DatabaseSink,
  type DecodedResult,
  type OutboxRelay,
  type RelayBroker,
  type RelayTarget,
  type RunOptions,
  type SinkDatabase,
  type Source,
  type Target,
} from '../../src/index.js';
import { counted } from '../../src/common/plural.js';
import type { Order } from './order-writers.js';

export const RELAY = 'orders-relay';
export const JOB = 'revenue-job';
export const SINK = 'revenue-report';

/** Where one run of the example keeps its data: a schema of its own and two streams. */
export interface ChainPlace {
  readonly schema: string;
  /** The stream the relay publishes the orders to. */
  readonly ordersStream: string;
  /** The stream the job publishes each hour's revenue to. */
  readonly revenueStream: string;
}

/** A broker as the chain uses it: sources to read, named-producer targets to publish to. */
export interface ChainBroker extends RelayBroker {
  source(stream: string): Source;
}

/** What a part of the chain runs on, in whichever process runs it. */
export interface ChainServers {
  readonly place: ChainPlace;
  readonly broker: ChainBroker;
  /** A port on the database; closing it leaves the database open. */
  port(): SinkDatabase;
}

export const ROLES = ['relay', 'job', 'sink'] as const;
export type Role = (typeof ROLES)[number];

/** One instance of a part of the chain. */
export interface ChainPart {
  /** Runs it (as its own `run`); resolves with what it did, as printed. */
  run(options?: RunOptions): Promise<string>;
  close(): Promise<void>;
}

/**
 * Faults to build a part with, to show its crashes in one process: the relay's and the job's
 * target, the sink's database, each wrapped.
 */
export interface PartFaults {
  readonly target?: (target: RelayTarget) => RelayTarget;
  readonly database?: (database: SinkDatabase) => SinkDatabase;
}

/** A fresh instance of the chain's `role` on `servers`, as a restart after a crash makes it. */
export function chainPart(role: Role, servers: ChainServers, faults: PartFaults = {}): ChainPart {
  const { place, broker } = servers;
  const target = (stream: string, options: { producer: string }): RelayTarget => {
    const made = broker.target(stream, options);
    return faults.target?.(made) ?? made;
  };
  switch (role) {
    case 'relay': {
      const relay = orderRelay(place, { target }, servers.port());
      // Any transaction open on the server holds back the rows committed after it began.
      relay.on('waiting', ({ rows, openTransaction }) =>
        console.log(`relay waits: ${rows}+ rows behind transaction ${openTransaction}, still open`),
      );
      return {
        run: async (options) => `${counted((await relay.run(options)).published, 'row')} published`,
        close: () => relay.close(),
      };
    }
    case 'job': {
      const job = revenueJob(
        broker.source(place.ordersStream),
        target(place.revenueStream, { producer: JOB }),
      );
      return {
        run: async (options) => `${counted((await job.run(options)).results, 'result')} published`,
        // A run, however it ends, releases its target's producer: nothing else to close.
        close: () => Promise.resolve(),
      };
    }
    case 'sink': {
      const port = servers.port();
      const sink = revenueSink(
        place,
        broker.source(place.revenueStream),
        faults.database?.(port) ?? port,
      );
      return {
        run: async (options) => `${counted((await sink.run(options)).applied, 'result')} applied`,
        close: () => sink.close(),
      };
    }
  }
}

/** The example's tables, schema-qualified. */
export function chainTables({ schema }: ChainPlace) {
  return {
    orders: `${schema}.orders`,
    outbox: `${schema}.orders_outbox`,
    revenue: `${schema}.revenue`,
    /** Orders behind a closed hour (none here: the grace covers the writers' disorder). */
    revenueLate: `${schema}.revenue_late`,
    checkpoints: `${schema}.stream_windows_checkpoints`,
  };
}

/** The relay: each committed outbox row onto the orders stream once, each region's in commit order. */
export function orderRelay(
  place: ChainPlace,
  broker: RelayBroker,
  database: SinkDatabase,
): OutboxRelay {
  return outboxRelay({
    name: RELAY,
    database,
    table: chainTables(place).outbox,
    broker,
    to: place.ordersStream,
  });
}

/**
 * The job: revenue per region per hour, in event time (when each order was placed, not when it
 * reached the stream: concurrent writers commit slightly out of that order; 10 minutes of grace
 * covers it). Each closed hour is one result; flush.caughtUp publishes the day's last hour when
 * a run with untilCaughtUp has read everything.
 */
export function revenueJob(source: Source, target: Target) {
  return aggregate<Order>(source)
    .eventTime((order) => order.placedAt)
    .tumbling('1h', { grace: '10m' })
    .key((order) => order.region)
    .reduce((cents, order) => cents + order.cents, 0)
    .to(target, { flush: { caughtUp: true } });
}

/**
 * The sink: each hour's revenue upserted into the revenue table (region = key, hour =
 * window_start, cents bigint) in ONE transaction with its checkpoint. One result a transaction:
 * in this small example that makes a crash between two hours possible.
 */
export function revenueSink(
  place: ChainPlace,
  source: Source,
  database: SinkDatabase,
): DatabaseSink<DecodedResult<number>> {
  const tables = chainTables(place);
  return databaseSink({
    name: SINK,
    source,
    database,
    checkpointTable: tables.checkpoints,
    maxBatchMessages: 1,
    into: windowOutputs<number>({
      table: tables.revenue,
      columns: (output) => ({ cents: output.value }),
      columnTypes: { cents: 'bigint' },
      lateTable: tables.revenueLate,
    }),
  });
}
