// An outbox relay at work under services' transactions while a test disturbs what it stands on:
// its database sessions, its broker connection, or the servers themselves (restarts). The one
// run must keep going through it ('retry' events), catch up once the services stop, and leave
// the stream holding every committed row once, each key in commit order (see ./outbox-orders.ts).
import type pg from 'pg';
import { expect, vi } from 'vitest';
import {
  outboxRelay,
  type OutboxRelay,
  type RelayBroker,
} from '../../../src/outbox/outbox-relay.js';
import type { RelayRunSummary } from '../../../src/outbox/relay-events.js';
import { createOutboxTable } from '../../../src/outbox/outbox-table.js';
import { postgres } from '../../../src/postgres/index.js';
import type { RabbitMQ } from '../../../src/rabbitmq/connection.js';
import { seededRandom } from '../arbitraries/seeded-random.js';
import { readAll } from '../brokers/rabbitmq.js';
import { bound } from '../timing.js';
import { seenOutboxMessage } from './outbox-fixture.js';
import { OrderWriters } from './outbox-orders.js';

/** Services writing orders at once; services 0 and 3 share their key. */
const SERVICES = 4;

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A relay named 'relay' on `pool`, from the outbox `table` to `stream`, that resumes soon
 * after a failure (10 ms, doubled up to 200 ms) and does not warn about its retries.
 */
export function retryingRelay(
  pool: pg.Pool,
  broker: RelayBroker,
  table: string,
  stream: string,
): OutboxRelay {
  return outboxRelay({
    name: 'relay',
    database: postgres(pool),
    table,
    broker,
    to: stream,
    pollIntervalMs: 10,
    retryDelayMs: 10,
    maxRetryDelayMs: 200,
    warnAfterRetries: Infinity,
  });
}

/** What a disturbed relay went through. */
export interface DisturbedRun {
  /** The errors of the relay's 'retry' events. */
  readonly retries: readonly Error[];
  /** What its one run, through the disturbance and the catch-up, returned. */
  readonly summary: RelayRunSummary;
  /** The rows on the stream, checked against the tables. */
  readonly rows: number;
  readonly writers: OrderWriters;
}

/** What a disturbance sees of the relay and the services while they run. */
export interface Disturbed {
  readonly relay: OutboxRelay;
  /** Rows the relay published so far, every one confirmed. */
  readonly published: () => number;
  /** The errors of the relay's 'retry' events so far. */
  readonly retries: readonly Error[];
  readonly writers: OrderWriters;
}

/** How `disturbedRelay` runs. */
export interface DisturbedRelayOptions {
  /** The services' pool, on the outbox's database. */
  readonly pool: pg.Pool;
  /** The outbox table, created here with the services' tables (`<table>_accounts`, `<table>_orders`). */
  readonly table: string;
  /** The relay, on a database connection of its own, from `table` to a stream `reader` reads. */
  readonly relay: OutboxRelay;
  /** A connection that reads the stream back at the end. */
  readonly reader: RabbitMQ;
  /** Seeds the services' keys, sizes and rollbacks. */
  readonly seed: number;
  /** The disturbance: the services write and the relay runs until it resolves. */
  readonly disrupt: (disturbed: Disturbed) => Promise<void>;
}

/**
 * Runs `relay` beside services writing orders (1-6 per transaction, 15% rolled back) until
 * `disrupt` is done; then stops the services, waits for the same run to put every committed
 * row on the stream, stops it, checks the stream (`OrderWriters.expectStream`) and closes
 * the relay. A run that stopped on an error fails it.
 */
export async function disturbedRelay(options: DisturbedRelayOptions): Promise<DisturbedRun> {
  const { pool, table, relay, reader, seed, disrupt } = options;
  await createOutboxTable(postgres(pool), table);
  const writers = new OrderWriters(pool, table);
  await writers.create();
  const retries: Error[] = [];
  let published = 0;
  relay.on('retry', ({ error }) => retries.push(error));
  relay.on('published', ({ rows }) => (published += rows));
  const controller = new AbortController();
  const running = relay.run({ signal: controller.signal });
  // Seen below; a run that fails meanwhile must not go unhandled.
  running.catch(() => undefined);
  const random = seededRandom(seed);
  let writing = true;
  const services = Array.from({ length: SERVICES }, async (_, w) => {
    for (let t = 0; writing; t++) {
      const keys = Array.from({ length: 1 + Math.floor(random() * 6) }, () => `k${w % 3}`);
      await writers.run({ keys, label: `w${w}-t${t}`, rollback: random() < 0.15 });
      await pause(Math.floor(random() * 10));
    }
  });
  const disrupting = disrupt({ relay, published: () => published, retries, writers });
  try {
    // A run that stops meanwhile fails the test with its error, not with a wait's time-out.
    await Promise.race([
      disrupting,
      running.then(() =>
        Promise.reject(new Error('the relay stopped before the disturbance ended')),
      ),
    ]);
    writing = false;
    await Promise.all(services);
    // The same run catches up (its backlog, asked beside it, is empty), unless it failed.
    await Promise.race([
      running,
      vi.waitFor(async () => expect((await relay.backlog()).rows).toBe(0n), {
        timeout: bound(60_000),
        interval: 50,
      }),
    ]);
  } finally {
    // After a failure too: nothing may outlive the test (its pools end after it).
    writing = false;
    controller.abort();
    await Promise.allSettled([disrupting, ...services, running]);
  }
  const summary = await running;
  const { lastPublishingId } = await relay.backlog();
  await relay.close();
  const seen = (await readAll(reader, relay.stream)).map((bytes) => seenOutboxMessage(bytes));
  return { retries, summary, rows: await writers.expectStream(seen, lastPublishingId), writers };
}
