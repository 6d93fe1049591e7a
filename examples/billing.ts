// npm run billing: usage events -> hourly totals per customer (a job) -> a `billing`
// table (a database sink), with crashes in both, then the table checked against the events
// to the cent. Runs on the embedded broker and PGlite (nothing to install);
// STREAM_WINDOWS_BROKER=rabbitmq npm run billing runs it on RabbitMQ and PostgreSQL.
// BILLING_CUSTOMERS=50000 bills 50,000 customers instead of four (3.6 million events): each
// hour's result then holds 50,000 outputs, too large for one write, and is published in
// several. On either broker: the embedded one stores each batch the producer sends as one
// chunk, as RabbitMQ stores a Publish frame's messages (about 2.7 GB resident at its peak).
import { aggregate, databaseSink, SinkError, windowOutputs } from '../src/index.js';
import { crashingDatabase } from './billing/crashing-database.js';
import {
  embeddedDatabase,
  postgresDatabase,
  type BillingDatabase,
} from './billing/billing-database.js';
import {
  CUSTOMERS,
  totalsFromEvents,
  usageEvents,
  type UsageEvent,
} from './billing/usage-events.js';
import { crashingTarget, DemoCrash } from './crashing-target.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';
import { counted } from '../src/common/plural.js';

const STREAMS = ['usage', 'hourly-totals'];
const customers = customerCount(process.env.BILLING_CUSTOMERS);
/** Rows of the bill printed in full; beyond them, only rows that differ from the events. */
const PRINTED_ROWS = 48;
const real = process.env.STREAM_WINDOWS_BROKER === 'rabbitmq';
const broker = real ? await rabbitBroker(STREAMS) : memoryBroker(STREAMS);
const database: BillingDatabase = real ? await postgresDatabase() : await embeddedDatabase();
console.log(`on ${broker.name}\nand ${database.name}\n`);

// 1. The usage events (integer cents, their own event time), written with the library's
//    producer. A named producer: written again after a failure, nothing is stored twice.
const events = usageEvents(customers);
const producer = broker.producer('usage-meter');
// The sends of a slice at once (the producer batches them), a slice after another: a large run's
// millions of promises would be too many for one Promise.all.
for (let i = 0; i < events.length; i += 100_000) {
  await Promise.all(events.slice(i, i + 100_000).map((event) => producer.send(event)));
}
console.log(`${events.length} usage events written\n`);

// 2. The tables. windowOutputs upserts by (key, window_start): key is the customer,
//    window_start the hour. Late usage (behind a closed hour) would go to billing_late, never
//    silently missing; these events are at most 90 s out of order, inside the 5 min grace.
const { schema } = database;
const billing = `${schema}.billing`;
await database.query(
  `CREATE TABLE ${billing} (key text NOT NULL, window_start timestamptz NOT NULL, ` +
    'window_end timestamptz NOT NULL, count integer NOT NULL, total_cents bigint NOT NULL, ' +
    'PRIMARY KEY (key, window_start))',
);
await database.query(
  `CREATE TABLE ${schema}.billing_late (result_offset bigint NOT NULL, position integer NOT NULL, ` +
    'value jsonb NOT NULL, PRIMARY KEY (result_offset, position))',
);

// 3. The job: hourly totals per customer in event time. Each closed hour is ONE result, under
//    the offset of the event that closed it: the broker deduplicates a result published again.
//    flush.caughtUp publishes the last hour when a run has read everything (a billing run).
const job = async (crash?: [number, 'after-publish' | 'before-publish']) => {
  const target = await broker.target('hourly-totals-job', 'hourly-totals');
  return aggregate<UsageEvent>(broker.source('usage'))
    .eventTime((event) => event.at)
    .tumbling('1h', { grace: '5m' })
    .key((event) => event.customer)
    .reduce((cents, event) => cents + event.cents, 0)
    .to(crash === undefined ? target : crashingTarget(target, ...crash), {
      flush: { caughtUp: true },
    });
};

// 4. The sink: each batch of results upserted into billing in ONE transaction with the sink's
//    checkpoint row, so a restart resumes exactly after what was committed.
const sink = (crash?: [number, 'before-commit' | 'after-commit']) =>
  databaseSink({
    name: 'billing',
    source: broker.source('hourly-totals'),
    database:
      crash === undefined
        ? database.port()
        : crashingDatabase(database.port(), `"${schema}"."billing"`, ...crash),
    checkpointTable: `${schema}.stream_windows_checkpoints`,
    maxBatchMessages: 2,
    into: windowOutputs<number>({
      table: billing,
      columns: (output) => ({ total_cents: output.value }),
      lateTable: `${schema}.billing_late`,
    }),
  });

// 5. Crashes in both, interleaved: the job dies after its 2nd hour reached the broker but
//    before the confirm; the sink dies after committing its 1st write, before it saw the
//    commit; the job dies before its 2nd publish; the sink dies with its 1st write done but not
//    committed (rolled back); then each runs to the end. Every restart is a fresh instance.
type Run =
  | ['job', [number, 'after-publish' | 'before-publish'] | undefined]
  | ['sink', [number, 'before-commit' | 'after-commit'] | undefined];
const runs: Run[] = [
  ['job', [2, 'after-publish']],
  ['sink', [1, 'after-commit']],
  ['job', [2, 'before-publish']],
  ['sink', [1, 'before-commit']],
  ['job', undefined],
  ['sink', undefined],
];
for (const [attempt, [which, crash]] of runs.entries()) {
  const label = `run ${attempt + 1}, ${which}`;
  try {
    if (which === 'job') {
      const { results } = await (await job(crash)).run({ untilCaughtUp: true });
      console.log(`${label}: caught up, ${counted(results, 'result')} published`);
    } else {
      const instance = sink(crash);
      try {
        const { applied } = await instance.run({ untilCaughtUp: true });
        console.log(`${label}: caught up, ${counted(applied, 'result')} applied`);
      } finally {
        await instance.close();
      }
    }
  } catch (error) {
    const crashed = error instanceof SinkError ? error.cause : error;
    if (!(crashed instanceof DemoCrash) || crash === undefined) throw error;
    // Which pipelined publish reports the job's crash first differs between brokers.
    console.log(`${label}: crashed ${crash[1]} ${crash[0]}; restarting`);
  }
}

// 6. The billing table against the totals computed straight from the events.
const rows = await database.query<{
  customer: string;
  hour: string;
  events: number;
  cents: string;
}>(
  "SELECT key AS customer, to_char(window_start AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS hour, " +
    `count AS events, total_cents::text AS cents FROM ${billing} ORDER BY key, window_start`,
);
const [late] = await database.query<{ n: number }>(
  `SELECT count(*)::int AS n FROM ${schema}.billing_late`,
);
const expected = totalsFromEvents(events);
const billed = new Map(rows.map((row) => [`${row.customer} ${row.hour}`, row]));
const keys = [...new Set([...billed.keys(), ...expected.keys()])].sort();
console.log('\ncustomer  hour              events   billing total_cents   from the events   same');
let equal = keys.length > 0 && late?.n === 0;
// Every row of a small bill; of a large one, its first rows and every row that differs.
let unprinted = 0;
for (const [index, key] of keys.entries()) {
  const row = billed.get(key);
  const want = expected.get(key);
  const same = row !== undefined && want !== undefined && BigInt(row.cents) === want.cents;
  equal &&= same && row.events === want.events;
  if (index >= PRINTED_ROWS && same) {
    unprinted++;
    continue;
  }
  const [customer = '', day = '', time = ''] = key.split(' ');
  console.log(
    `${customer.padEnd(9)} ${day} ${time}  ${String(row?.events ?? '-').padStart(6)}  ` +
      `${(row?.cents ?? '-').padStart(20)}  ${String(want?.cents ?? '-').padStart(16)}   ` +
      (same ? 'yes' : 'NO'),
  );
}
if (unprinted > 0) console.log(`... and ${unprinted} more rows, the same as the events say`);
const sum = (values: Iterable<bigint>) => [...values].reduce((a, b) => a + b, 0n);
const dollars = (cents: bigint) => `$${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
console.log(
  `\nbilled ${dollars(sum(rows.map((row) => BigInt(row.cents))))}; ` +
    `the events say ${dollars(sum([...expected.values()].map((total) => total.cents)))}; ` +
    `late usage rows: ${late?.n}`,
);
console.log(`billing table equals the events: ${equal ? 'yes' : 'no'}`);
await database.close();
await broker.close();
if (!equal) process.exitCode = 1;

/** BILLING_CUSTOMERS: how many customers to bill (default the four named ones). */
function customerCount(given: string | undefined): number {
  if (given === undefined || given === '') return CUSTOMERS.length;
  const count = Number(given);
  if (!Number.isSafeInteger(count) || count < 1) {
    throw new Error(`BILLING_CUSTOMERS must be a positive integer, given: '${given}'`);
  }
  return count;
}
