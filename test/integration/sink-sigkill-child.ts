// The child process of sink-sigkill.test.ts: a database sink reading a RabbitMQ stream of
// usage events into PostgreSQL, run until caught up (exit 0) or killed. Each batch adds its
// events to `totals` (cents and messages per customer: applied twice, a batch would count
// twice) and lists their offsets in `seen`, in the batch's transaction with the checkpoint.
// Prints 'p' for each batch it handled: applied, or passed over (another instance's), and 's'
// for each batch with messages passed over. Given HANG_AT_BATCH, it prints no 'p' but, in that
// batch's transaction, its statements run, prints 'p' and waits for its SIGKILL: a kill
// certain to land mid-transaction.
//   sink-sigkill-child.ts RABBITMQ_URL POSTGRES_URL STREAM SINK_NAME MAX_BATCH_MESSAGES [HANG_AT_BATCH]
import { databaseSink, eachBatch } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import { connect } from '../../src/rabbitmq/index.js';
import { applyUsage, type Usage } from '../support/jobs/usage-totals.js';

const [rabbitmqUrl, postgresUrl, stream, name, maxBatch, hangAt] = process.argv.slice(2);
let batches = 0;
if (maxBatch === undefined) {
  throw new Error('usage: sink-sigkill-child.ts RABBITMQ_URL POSTGRES_URL STREAM SINK MAX_BATCH');
}

const rabbit = await connect(rabbitmqUrl ?? '');
const sink = databaseSink({
  name: name ?? '',
  source: rabbit.source(stream ?? ''),
  database: postgres({ connectionString: postgresUrl }),
  maxBatchMessages: Number(maxBatch),
  maxBatchDelayMs: 20,
  into: eachBatch<Usage>({
    apply: async (tx, batch) => {
      await applyUsage(tx, batch);
      if (hangAt !== undefined && ++batches >= Number(hangAt)) {
        process.stdout.write('p');
        await new Promise(() => undefined); // the pg connection keeps the process alive
      }
    },
  }),
});
const mark = (skipped: number): void => {
  if (hangAt === undefined) process.stdout.write('p');
  if (skipped > 0) process.stdout.write('s');
};
sink.on('applied', (event) => mark(event.skipped));
sink.on('skipped', (event) => mark(event.messages));
await sink.run({ untilCaughtUp: true });
await sink.close();
await rabbit.close();
