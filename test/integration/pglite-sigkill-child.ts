// The child process of pglite-sigkill.test.ts: a database sink reading a RabbitMQ stream of
// usage events into a PGlite whose data directory is a folder on disk, run until caught up
// (exit 0) or killed. Each batch adds its events to `totals` and lists their offsets in `seen`
// in the batch's transaction with the checkpoint. Prints 'o' once PGlite is open and 'p' for
// each batch committed. A PGlite that fails to open is reported on stderr (its error and
// stack) and ends the process with code 3.
//   pglite-sigkill-child.ts RABBITMQ_URL DATA_DIR STREAM MAX_BATCH_MESSAGES
import { PGlite } from '@electric-sql/pglite';
import { databaseSink, eachBatch } from '../../src/index.js';
import { pglite } from '../../src/pglite/index.js';
import { connect } from '../../src/rabbitmq/index.js';
import { applyUsage, type Usage } from '../support/jobs/usage-totals.js';

const [rabbitmqUrl, dataDir, stream, maxBatch] = process.argv.slice(2);
if (maxBatch === undefined) {
  throw new Error('usage: pglite-sigkill-child.ts RABBITMQ_URL DATA_DIR STREAM MAX_BATCH');
}

let db: PGlite;
try {
  db = await PGlite.create(dataDir);
  await db.exec(
    'CREATE TABLE IF NOT EXISTS totals (customer int PRIMARY KEY, cents bigint NOT NULL, ' +
      'messages bigint NOT NULL); CREATE TABLE IF NOT EXISTS seen (message_offset bigint NOT NULL)',
  );
} catch (error) {
  process.stderr.write(`PGlite on '${dataDir}' failed to open: ${(error as Error).stack}\n`);
  process.exit(3);
}
process.stdout.write('o');

const rabbit = await connect(rabbitmqUrl ?? '');
const sink = databaseSink({
  name: 'pglite-sigkill',
  source: rabbit.source(stream ?? ''),
  database: pglite(db),
  maxBatchMessages: Number(maxBatch),
  maxBatchDelayMs: 20,
  into: eachBatch<Usage>({
    apply: applyUsage,
  }),
});
sink.on('applied', () => process.stdout.write('p'));
await sink.run({ untilCaughtUp: true });
await sink.close();
await db.close();
await rabbit.close();
