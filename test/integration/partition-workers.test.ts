// A partitioned job over worker threads against the real broker: a 3-partition super stream,
// two workers, each partition's results on a stream of its own.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { jsonMessage, PartitionWorkerError, PartitionWorkers } from '../../src/index.js';
import ordersJob, { type OrdersJobConfig } from '../support/jobs/partition-worker-job.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const broker = rabbitForTests();
const ORDERS_PER_PARTITION = 12; // four results of three each
let superStream = '';
let partitions: string[] = [];

beforeAll(async () => {
  superStream = uniqueStream('workers-orders');
  partitions = await broker.rabbit.createSuperStream(superStream, { partitions: 3 });
  for (const [p, stream] of partitions.entries()) {
    const orders = Array.from({ length: ORDERS_PER_PARTITION }, (_, i) =>
      jsonMessage({ amount: p * 100 + i }),
    );
    await publishAll(broker.rabbit, stream, orders);
  }
});
afterAll(async () => {
  await broker.rabbit.deleteSuperStream(superStream);
});

/** A config whose three per-partition target streams exist, empty. */
async function freshTargets(prefix: string, failing?: string): Promise<OrdersJobConfig> {
  const target = uniqueStream(prefix);
  for (const index of [0, 1, 2]) broker.track(`${target}-${index}`);
  for (const index of [0, 1, 2]) await broker.rabbit.createStream(`${target}-${index}`);
  return { url: inject('rabbitmqUrl'), superStream, target, failing };
}

const targets = (config: OrdersJobConfig) =>
  Promise.all([0, 1, 2].map((index) => readAll(broker.rabbit, `${config.target}-${index}`)));

function workersOf(config: OrdersJobConfig): PartitionWorkers {
  return new PartitionWorkers(new URL('../support/jobs/partition-worker-job.ts', import.meta.url), {
    workers: 2,
    imports: [new URL('../support/children/register-tsx.mjs', import.meta.url)],
    config,
  });
}

const child = (config: OrdersJobConfig, mode: 'until' | 'signal') => [
  '--import',
  'tsx',
  'test/integration/partition-workers-child.ts',
  JSON.stringify(config),
  mode,
];

describe('a partitioned job over worker threads', () => {
  it('writes byte for byte what one thread writes, and its process ends by itself once caught up', async () => {
    const single = await freshTargets('workers-single');
    const { job, close } = await ordersJob({ index: 0, workers: 1, config: single });
    await job.run({ untilCaughtUp: true });
    await close();

    const spread = await freshTargets('workers-spread');
    // A bound: the process must end by itself, nothing keeping it alive.
    const { stdout } = await promisify(execFile)(process.execPath, child(spread, 'until'), {
      timeout: bound(30_000),
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as {
      results: number;
      partitions: { results: number }[];
    };
    expect(summary.results).toBe(12);
    expect(summary.partitions.map((p) => p.results)).toEqual([4, 4, 4]);
    const written = await targets(spread);
    expect(written.map((messages) => messages.length)).toEqual([4, 4, 4]);
    expect(written).toEqual(await targets(single));
  });

  it('stops every worker on SIGTERM under runUntilSignal, and the process ends by that signal', async () => {
    const config = await freshTargets('workers-sigterm');
    const process_ = spawn(process.execPath, child(config, 'signal'), { stdio: 'pipe' });
    const ended = new Promise<NodeJS.Signals | null>((resolve) =>
      process_.on('exit', (_code, signal) => resolve(signal)),
    );
    let stdout = '';
    await new Promise<void>((resolve) =>
      process_.stdout.on('data', (data: Buffer) => {
        stdout += data.toString();
        if (stdout.includes('published')) resolve();
      }),
    );
    process_.kill('SIGTERM');
    expect(await ended).toBe('SIGTERM');
    // The workers stopped within the grace: it did not run out, their threads were not cut.
    expect(stdout).toContain('log info stopping on SIGTERM');
    expect(stdout).toContain('log info stopped on SIGTERM');
    expect(stdout).not.toContain('ran out');
  });

  it('resolves once every worker stopped when its signal aborts, with every partition summary', async () => {
    const config = await freshTargets('workers-abort');
    const workers = workersOf(config);
    const stop = new AbortController();
    const publishedBy = new Set<number>();
    workers.on('published', (_event, partition) => {
      publishedBy.add(partition.index);
      if (publishedBy.size === 3) stop.abort();
    });
    const summary = await workers.run({ signal: stop.signal });
    expect(summary.partitions).toHaveLength(3);
    expect(summary.results).toBeGreaterThanOrEqual(3);
    expect(workers.inFlight).toBe(0);
  });

  it('rejects with the error of a worker whose job failed, naming the worker and the partition, and stops the other', async () => {
    const config = await freshTargets('workers-fail', partitions[1]);
    const workers = workersOf(config);
    const stopped: number[] = [];
    workers.on('stopped', (_event, partition) => stopped.push(partition.index));
    // Without untilCaughtUp worker 0 would run on: only the failure of worker 1 stops it.
    const error = await workers.run().catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(PartitionWorkerError);
    expect(error).toMatchObject({ worker: 1, workers: 2, partition: partitions[1] });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^worker 1 of 2 \\(partition '${partitions[1]}'\\) failed: .*this target is broken on purpose`,
      ),
    );
    expect(stopped.sort()).toEqual([0, 1, 2]);
  });
});
