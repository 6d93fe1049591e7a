// The database sink process of the multi-write SIGKILL test: reads the wide-steps job's target
// on RabbitMQ into PostgreSQL (`wideStepsSinkShape`: windowOutputs into `wide_totals`, and a
// row of `wide_commits` per transaction saying what it held) while the job is written and
// killed between a step's writes, so that it reads steps not whole yet. Its batches are small
// (3 messages, 20 ms) next to a step's 8 messages: only its waiting for a step's last part
// keeps a transaction from ending inside a step. It prints 't' when a transaction begins to
// apply its batch and 'p' once it has committed, and runs until the test kills it, at moments
// of its choice or once it has applied the whole target.
//   wide-steps-sink-child.ts RABBITMQ_URL POSTGRES_URL TARGET SINK_NAME
import { databaseSink } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import { connect } from '../../src/rabbitmq/index.js';
import { wideStepsSinkShape } from '../support/jobs/wide-steps.js';

const [rabbitmqUrl, postgresUrl, stream, name] = process.argv.slice(2);
if (name === undefined) {
  throw new Error('usage: wide-steps-sink-child.ts RABBITMQ_URL POSTGRES_URL TARGET SINK_NAME');
}
const rabbit = await connect(rabbitmqUrl ?? '');
const sink = databaseSink({
  name,
  source: rabbit.source(stream ?? ''),
  database: postgres({ connectionString: postgresUrl }),
  maxBatchMessages: 3,
  maxBatchDelayMs: 20,
  into: wideStepsSinkShape(() => process.stdout.write('t')),
});
sink.on('applied', () => process.stdout.write('p'));
await sink.run();
