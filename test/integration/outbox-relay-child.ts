// The relay process of the outbox SIGKILL test: `outboxRelay` on PostgreSQL and RabbitMQ, named
// 'relay', killed by the test at moments of its choice and started again. It tells the test
// what it does, one line each, so that a kill can land between a publish and its confirm:
//   started <last publishing id>      resumed from where the stream stands
//   sent <publishing id>              a frame of rows handed to the broker (its last row's id)
//   published <rows> <publishing id>  a batch confirmed, every row of it
//   waiting <transaction id>          rows held back behind an open transaction
//   done <rows> <wall ms> <user µs> <system µs>   (catch-up only) caught up: rows, time, CPU
// With 'run' it publishes in batches of 200 rows (4 frames) until it is killed; with 'catch-up' it runs
// with the default options until every committed row is on the stream, then exits 0.
//   outbox-relay-child.ts RABBITMQ_URL POSTGRES_URL TABLE STREAM run|catch-up
import { outboxRelay } from '../../src/outbox/outbox-relay.js';
import { postgres } from '../../src/postgres/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { watchedRelayBroker } from '../support/doubles/watched-relay-broker.js';

const [rabbitmqUrl, postgresUrl, table, stream, mode] = process.argv.slice(2);
if (stream === undefined || (mode !== 'run' && mode !== 'catch-up')) {
  throw new Error(
    'usage: outbox-relay-child.ts RABBITMQ_URL POSTGRES_URL TABLE STREAM run|catch-up',
  );
}
// Pipes are written synchronously on Linux: a line is out before the next statement runs.
const tell = (line: string): boolean => process.stdout.write(`${line}\n`);

const rabbit = await connect(rabbitmqUrl ?? '');
const relay = outboxRelay({
  name: 'relay',
  database: postgres({ connectionString: postgresUrl, application_name: 'outbox-relay-child' }),
  table,
  broker: watchedRelayBroker(rabbit, (id) => tell(`sent ${id}`)),
  to: stream,
  ...(mode === 'run' ? { maxBatchRows: 200, pollIntervalMs: 10, retryDelayMs: 10 } : {}),
});
relay.on('started', (event) => tell(`started ${event.lastPublishingId}`));
relay.on('published', (event) => tell(`published ${event.rows} ${event.lastPublishingId}`));
relay.on('waiting', (event) => tell(`waiting ${event.openTransaction}`));

const cpu = process.cpuUsage();
const started = performance.now();
const summary = await relay.run({ untilCaughtUp: mode === 'catch-up' });
const used = process.cpuUsage(cpu);
tell(
  `done ${summary.published} ${Math.round(performance.now() - started)} ${used.user} ${used.system}`,
);
await relay.close();
await rabbit.close();
