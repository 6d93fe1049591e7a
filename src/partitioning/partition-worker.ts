// One worker thread of `PartitionWorkers`: builds the job from the user's module, runs the
// partitions this worker owns until the parent says 'stop', closes, and posts the outcome.
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../common/errors.js';
import type { Partition, PartOfJobRunOptions } from './partitioned-runner.js';
import { toThread, withError } from './thread-error.js';
import type {
  ParentMessage,
  PartitionWorkerJob,
  WorkerData,
  WorkerMessage,
} from './partition-workers.js';

const port = parentPort;
if (port === null) throw new Error('partition-worker runs in a worker thread of PartitionWorkers');
const data = workerData as WorkerData;
const post = (message: WorkerMessage): void => port.postMessage(message);

let built: PartitionWorkerJob | undefined;
const stop = new AbortController();
/** Lets the job's loops start: the parent checked every thread's producer names. */
let producersChecked = (): void => undefined;
port.on('message', (message: ParentMessage) => {
  if (message === 'checked') producersChecked();
  if (message !== 'stop') return;
  const inFlight = built?.job.runners.reduce((total, runner) => total + runner.inFlight, 0) ?? 0;
  post({ type: 'inFlight', count: inFlight });
  stop.abort();
});

let outcome: WorkerMessage;
let failedPartition: string | undefined;
const owned: Partition[] = [];
try {
  built = await build(((await import(data.module)) as { default?: unknown }).default);
  const { job } = built;
  for (const name of data.events) {
    job.on(name, (event, partition) =>
      post({ type: 'event', name, event: withError(event, toThread), partition }),
    );
  }
  job.on('stopped', ({ error }, partition) => {
    if (error !== undefined) failedPartition ??= partition.stream;
  });
  // PartitionedJob.run takes the public options; a PartitionedRunner reads the internal one.
  const options: PartOfJobRunOptions = {
    signal: stop.signal,
    untilCaughtUp: data.untilCaughtUp,
    partitions: (partition) => {
      const mine = partition.index % data.workers === data.index;
      if (mine) owned.push(partition);
      return mine;
    },
    // The parent checks the whole job's names; stopped meanwhile, the loops return at once.
    checkProducers: (job, producers) =>
      new Promise<void>((resolve) => {
        producersChecked = resolve;
        if (stop.signal.aborted) resolve();
        stop.signal.addEventListener('abort', () => resolve(), { once: true });
        post({ type: 'producers', job, producers });
      }),
  };
  const summary = await job.run(options);
  outcome = { type: 'done', summary, partitions: owned };
} catch (error) {
  outcome = { type: 'failed', error: toThread(error), partition: failedPartition };
}
try {
  await built?.close();
} catch (error) {
  if (outcome.type === 'done')
    outcome = { type: 'failed', error: toThread(error), partition: undefined };
}
post(outcome);

async function build(factory: unknown): Promise<PartitionWorkerJob> {
  if (typeof factory !== 'function') {
    throw new ConfigError(
      'module',
      'must export as default a function (worker) => { job, close } building the partitioned job',
      data.module,
    );
  }
  const made = (await (factory as (worker: object) => unknown)({
    index: data.index,
    workers: data.workers,
    config: data.config,
  })) as Partial<PartitionWorkerJob> | null | undefined;
  if (typeof made?.job?.run !== 'function' || typeof made.close !== 'function') {
    throw new ConfigError(
      'module',
      "'s default export must return { job: a PartitionedRunner, close: a function }",
      data.module,
    );
  }
  return made as PartitionWorkerJob;
}
