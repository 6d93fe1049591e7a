// The process of the PartitionWorkers tests that need one of their own: the job of
// test/support/partition-worker-job.ts over two worker threads, under runUntilSignal.
// `node partition-workers-child.ts CONFIG_JSON until` runs until caught up and prints the
// summary, then returns (the process must end by itself); `... signal` prints 'published'
// at the first confirm and runs until SIGTERM.
import { runUntilSignal } from '../../src/index.js';
import { PartitionWorkers } from '../../src/core/partition-workers.js';

const [config = '{}', mode = 'until'] = process.argv.slice(2);
const workers = new PartitionWorkers(
  new URL('../support/partition-worker-job.ts', import.meta.url),
  {
    workers: 2,
    imports: [new URL('../support/register-tsx.mjs', import.meta.url)],
    config: JSON.parse(config) as unknown,
  },
);
const off = workers.on('published', () => {
  off();
  console.log('published');
});
const summary = await runUntilSignal(workers, {
  close: () => workers.close(),
  untilCaughtUp: mode === 'until',
});
console.log(JSON.stringify(summary));
