import { describe, expect, it } from 'vitest';
import { ConfigError, PartitionWorkerError, PartitionWorkers } from '../../../src/index.js';

const registerTsx = new URL('../../support/register-tsx.mjs', import.meta.url);

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
    const module = new URL('../../support/not-a-job-module.mjs', import.meta.url);
    const workers = new PartitionWorkers(module, { workers: 1, imports: [registerTsx] });
    const error = await workers.run({ untilCaughtUp: true }).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(PartitionWorkerError);
    expect(error).toMatchObject({ worker: 0, workers: 1, partition: undefined });
    expect((error as Error).message).toBe(
      `worker 0 of 1 failed: module must export as default a function (worker) => { job, close } building the partitioned job, given: '${module.href}'`,
    );
    expect((error as Error).cause).toMatchObject({ name: 'ConfigError', code: 'CONFIG_INVALID' });
  });
});
