// The process of the PartitionWorkers tests that need one of their own: the job of
// test/support/jobs/partition-worker-job.ts over two worker threads, under runUntilSignal.
// `node partition-workers-child.ts CONFIG_JSON until` runs until caught up and prints the
// summary, then returns (the process must end by itself); `... signal` prints 'published'
// at the first confirm and runs until SIGTERM; both print runUntilSignal's log lines.
import { runUntilSignal } from '../../src/index.js';
import { PartitionWorkers } from '../../src/partitioning/partition-workers.js';

const [config = '{}', mode = 'until'] = process.argv.slice(2);
const workers = new PartitionWorkers(
  new URL('../support/jobs/partition-worker-job.ts', import.meta.url),
  {
    workers: 2,
    imports: [new URL('../support/children/register-tsx.mjs', import.meta.url)],
    config: JSON.parse(config) as unknown,
  },
);
const off = workers.on('published', () => {
  off();
  console.log('published');
});
// Every log line of runUntilSignal, so that the parent sees whether the workers stopped in
// the grace or the grace ran out.
const log = (level: string) => (_fields: object, message: string) =>
  console.log(`log ${level} ${message}`);
const summary = await runUntilSignal(workers, {
  close: () => workers.close(),
  untilCaughtUp: mode === 'until',
  logger: { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') },
});
console.log(JSON.stringify(summary));
