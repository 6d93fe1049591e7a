import { describe, expect, it } from 'vitest';
import { ConfigError, PartitionWorkerError, PartitionWorkers } from '../../../src/index.js';
import type { MemoryOrdersConfig } from '../../support/jobs/memory-partition-worker-job.js';

const registerTsx = new URL('../../support/children/register-tsx.mjs', import.meta.url);
const memoryOrders = new URL('../../support/jobs/memory-partition-worker-job.ts', import.meta.url);

/** `workers` threads running the embedded-broker orders job (see its module) to its end. */
async function runMemoryOrders(workers: number, config: MemoryOrdersConfig) {
  const threads = new PartitionWorkers(memoryOrders, { workers, imports: [registerTsx], config });
  let published = 0;
  threads.on('published', () => published++);
  let error: unknown;
  const summary = await threads.run({ untilCaughtUp: true }).catch((failure: unknown) => {
    error = failure;
    return undefined;
  });
  return { summary, error, published };
}

describe('PartitionWorkers', () => {
  it.each([
    [{ workers: 0 }, 'workers must be a positive integer, given: 0'],
    [{ workers: 1.5 }, 'workers must be a positive integer, given: 1.5'],
    [{ imports: 'tsx' }, "imports must be an array of module URLs or specifiers, given: 'tsx'"],
    [{ logger: {} }, "logger must have pino's methods"],
    [{ config: { route: () => 0 } }, 'config must be structured-cloneable (no functions), given: '],
  ])('refuses the options %o where they are given', (options, message) => {
    expect(() => new PartitionWorkers('job.js', options as never)).toThrow(ConfigError);
    expect(() => new PartitionWorkers('job.js', options as never)).toThrow(message);
  });

  it('refuses a module that is neither a URL nor a path', () => {
    expect(() => new PartitionWorkers('')).toThrow('module must be a URL or a path of a module');
    expect(() => new PartitionWorkers(42 as never)).toThrow(ConfigError);
  });

  it('rejects the run, naming the worker and the module, when the module exports no job builder', async () => {
    const module = new URL('../../support/jobs/not-a-job-module.mjs', import.meta.url);
    const workers = new PartitionWorkers(module, { workers: 1, imports: [registerTsx] });
    const error = await workers.run({ untilCaughtUp: true }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(PartitionWorkerError);
    expect(error).toMatchObject({ worker: 0, workers: 1, partition: undefined });
    expect((error as Error).message).toBe(
      `worker 0 of 1 failed: module must export as default a function (worker) => { job, close } building the partitioned job, given: '${module.href}'`,
    );
    expect((error as Error).cause).toMatchObject({ name: 'ConfigError', code: 'CONFIG_INVALID' });
  });

  it.each([1, 2])(
    'refuses 256 producer names on one target stream over %i worker(s), the whole job checked once before any thread publishes',
    async (workers) => {
      const { error, published } = await runMemoryOrders(workers, { partitions: 256 });
      expect(error).toBeInstanceOf(ConfigError);
      expect(error).toEqual(
        new ConfigError(
          'producers',
          "must be at most 255 per target stream (RabbitMQ tracks that many), on 'rollups'",
          256,
        ),
      );
      expect(published).toBe(0);
    },
  );

  it('runs 255 producer names on one target stream over two workers, each partition once', async () => {
    const { summary, published } = await runMemoryOrders(2, { partitions: 255 });
    expect(summary?.results).toBe(255);
    expect(summary?.partitions).toHaveLength(255);
    expect(published).toBe(255);
  });

  it('refuses one producer name for two partitions run by different workers, before either publishes (a third worker with no partition)', async () => {
    const { error, published } = await runMemoryOrders(3, { partitions: 2, producer: 'same' });
    expect(error).toEqual(
      new ConfigError(
        'producer',
        "must be unique across the partitions of job 'rollup' on target stream 'rollups'",
        'same',
      ),
    );
    expect(published).toBe(0);
  });
});
