// npm run orders: the whole chain, database -> stream -> windows -> stream -> database, with
// kills all along it. Concurrent writers place a day's orders, each an `orders` row and its
// outbox row in ONE transaction (one in eight rolled back); an outbox relay publishes the
// committed ones to a stream; a job totals revenue per region per hour in event time; a
// database sink writes the totals into a report table. Meanwhile the relay, the job and the sink
// are each killed three times at random and restarted. Then each runs to the end, and the
// report table is checked against the committed orders, to the cent (exit 1 if it differs).
// On the embedded broker and PGlite (nothing to install; a kill is a crash at a random
// publish or write, in this process); STREAM_WINDOWS_BROKER=rabbitmq npm run orders runs it on
// RabbitMQ and PostgreSQL, each part in a child process killed with SIGKILL. ORDERS_SEED=<n>
// repeats a run's kills (on the embedded broker, the same crash points).
import { createOutboxTable } from '../src/index.js';
import { counted } from '../src/common/plural.js';
import type { ChainLane } from './orders/chain-lane.js';
import { crashingLane } from './orders/crashing-lane.js';
import { killedLane } from './orders/killed-lane.js';
import { chainPart, chainTables, ROLES } from './orders/orders-chain.js';
import { embeddedServers, realServers } from './orders/orders-servers.js';
import { placeOrders, plannedOrders, type WritersOptions } from './orders/order-writers.js';
import { checkReport } from './orders/revenue-report.js';

const began = performance.now();
const real = process.env.STREAM_WINDOWS_BROKER === 'rabbitmq';
const seed = seedOf(process.env.ORDERS_SEED);
const random = seededRandom(seed);
const servers = real ? await realServers() : await embeddedServers();
const tables = chainTables(servers.place);
console.log(`on ${servers.name}\nkills seeded with ORDERS_SEED=${seed}\n`);

let lanes: ChainLane[] = [];
let equal = false;
try {
  // 1. The business table, and the outbox the writers add to in the same transactions.
  await servers.query(
    `CREATE TABLE ${tables.orders} (id integer PRIMARY KEY, region text NOT NULL, ` +
      'cents integer NOT NULL, placed_at timestamptz NOT NULL)',
  );
  await createOutboxTable(servers.port(), tables.outbox);

  // 2. The chain runs while the orders come in, each part killed KILLS times and restarted
  //    (./orders/chain-lane.ts).
  //    Each its own generator: the parts restart in an order that timing decides.
  lanes = ROLES.map((role) => {
    const own = seededRandom(Math.floor(random() * 2 ** 32));
    return real
      ? killedLane(role, servers.place, servers.childEnv, own)
      : crashingLane(role, servers, own);
  });
  const writers: WritersOptions = {
    ordersTable: tables.orders,
    outboxTable: tables.outbox,
    ...(real
      ? // At once, paced over about as long as the children's kills take: they land mid-flow.
        { writers: 6, pauseMs: () => random() * 100, commitDelayMs: () => random() * 20 }
      : // PGlite is one connection: the writers take turns, as fast as it goes.
        { writers: 4, pauseMs: () => 0, commitDelayMs: () => 0 }),
  };
  const orders = plannedOrders();
  const [written] = await Promise.all([
    placeOrders(servers.port(), orders, writers),
    ...lanes.map((lane) => lane.killed),
  ]);
  for (const lane of lanes) await lane.stop();
  console.log(
    `${writers.writers} writers placed ${orders.length} orders in ${seconds(written.elapsedMs)}: ` +
      `${written.committed} committed, ${written.rolledBack} rolled back (payment declined), ` +
      `${counted(written.retried, 'transaction')} retried`,
  );
  for (const lane of lanes) {
    console.log(
      `${lane.role}: ${real ? 'SIGKILLed' : 'crashed'} ${lane.kills.join('; ')}; restarted each time`,
    );
  }

  // 3. Each part in this process until it has caught up: the relay publishes what is left, the
  //    job publishes the day's last hour (flush.caughtUp), the sink applies the rest.
  console.log('');
  for (const role of ROLES) {
    const part = chainPart(role, servers);
    const from = performance.now();
    try {
      const did = await part.run({ untilCaughtUp: true });
      console.log(`${role} to the end: ${did} in ${seconds(performance.now() - from)}`);
    } finally {
      await part.close();
    }
  }

  // 4. The report table against the committed orders.
  equal = await checkReport(servers);
} finally {
  for (const lane of lanes) await lane.stop();
  await servers.close();
}
console.log(`\ndone in ${seconds(performance.now() - began)}`);
if (!equal) process.exitCode = 1;

/** A duration as printed: 3412 ms is '3.4 s'. */
function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** ORDERS_SEED: a run's seed (default: a new one, printed, so that a run can be repeated). */
function seedOf(given: string | undefined): number {
  if (given === undefined || given === '') return Math.floor(Math.random() * 2 ** 32);
  const value = Number(given);
  if (!Number.isSafeInteger(value) || value < 0 || value >= 2 ** 32) {
    throw new Error(`ORDERS_SEED must be an integer from 0 to 4294967295, given: '${given}'`);
  }
  return value;
}

/**
 * Uniform in [0, 1) from `seed` (mulberry32: generators seeded with one's outputs run
 * unrelated sequences, not one sequence shifted, as a multiplicative one would).
 */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
