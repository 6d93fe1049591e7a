// runUntilSignal without a signal: its checks, and a job that stops by itself. What a
// signal does is tested in a child process (test/integration/run-until-signal.test.ts).
import { describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  runUntilSignal,
  type RunOptions,
  type RunSummary,
  type RunUntilSignalOptions,
  type StoppableJob,
} from '../../../src/index.js';

const SUMMARY: RunSummary = { results: 3, duplicates: 1, restarts: 0 };

/** A job whose run() resolves or rejects when the test says, recording how it was run. */
function controlledJob(): StoppableJob & {
  calls: RunOptions[];
  finish(outcome: { summary: RunSummary } | { error: unknown }): void;
} {
  const calls: RunOptions[] = [];
  let settle: (outcome: { summary: RunSummary } | { error: unknown }) => void = () => undefined;
  return {
    calls,
    inFlight: 0,
    run(options) {
      calls.push(options);
      return new Promise((resolve, reject) => {
        settle = (outcome) => {
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.summary);
        };
      });
    },
    finish: (outcome) => settle(outcome),
  };
}

const listeners = (): number[] => [
  process.listenerCount('SIGTERM'),
  process.listenerCount('SIGINT'),
];

/** Lets the job's run() be called (runUntilSignal calls it in a then). */
const started = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('runUntilSignal options', () => {
  it.each([
    [{ graceMs: -1 }, 'graceMs must be >= 0 ms, given: -1'],
    [{ graceMs: Number.NaN }, 'graceMs must be a finite number of milliseconds, given: NaN'],
    [{ graceMs: Infinity }, 'graceMs must be a finite number of milliseconds, given: Infinity'],
    [{ graceMs: '10' }, "graceMs must be a finite number of milliseconds, given: '10'"],
    [{ graceMs: 2 ** 31 }, 'graceMs must be at most 2147483647 ms'],
    [
      { close: undefined },
      'close must be a function that closes the connections, given: undefined',
    ],
    [{ close: 'rabbit' }, "close must be a function that closes the connections, given: 'rabbit'"],
    [
      { logger: { info: () => undefined } },
      "logger must have pino's methods debug, info, warn and error (missing: debug, warn, error)",
    ],
  ])('should refuse %o with a ConfigError before running the job', async (bad, message) => {
    const job = controlledJob();
    const options = { close: () => undefined, ...bad } as unknown as RunUntilSignalOptions;
    const refused = runUntilSignal(job, options);
    await expect(refused).rejects.toThrow(ConfigError);
    await expect(refused).rejects.toThrow(message);
    expect(job.calls).toHaveLength(0);
  });

  it('should refuse a job without a run method with a ConfigError', async () => {
    const notAJob = { inFlight: 0 } as unknown as StoppableJob;
    await expect(runUntilSignal(notAJob, { close: () => undefined })).rejects.toThrow(
      'job must have a run(options) method (a Runner)',
    );
  });

  it('should accept a grace of 0 ms (close at once on a signal)', async () => {
    const job = controlledJob();
    const running = runUntilSignal(job, { close: () => undefined, graceMs: 0 });
    await started();
    job.finish({ summary: SUMMARY });
    await expect(running).resolves.toEqual(SUMMARY);
  });
});

describe('runUntilSignal with a job that stops by itself', () => {
  it('should listen to SIGTERM and SIGINT while the job runs, and pass untilCaughtUp and a live signal to run()', async () => {
    const before = listeners();
    const job = controlledJob();
    const running = runUntilSignal(job, { close: () => undefined, untilCaughtUp: true });
    await started();
    expect(listeners()).toEqual(before.map((n) => n + 1));
    expect(job.calls).toHaveLength(1);
    expect(job.calls[0]?.untilCaughtUp).toBe(true);
    expect(job.calls[0]?.signal?.aborted).toBe(false);
    job.finish({ summary: SUMMARY });
    await running;
  });

  it("should close, remove its listeners and resolve with the run's summary when the job ends", async () => {
    const before = listeners();
    const job = controlledJob();
    const close = vi.fn(() => {
      expect(listeners()).toEqual(before.map((n) => n + 1)); // a signal while closing still counts
      return Promise.resolve();
    });
    const running = runUntilSignal(job, { close });
    await started();
    expect(close).not.toHaveBeenCalled();
    job.finish({ summary: SUMMARY });
    await expect(running).resolves.toEqual(SUMMARY);
    expect(close).toHaveBeenCalledTimes(1);
    expect(listeners()).toEqual(before);
  });

  it("should close, remove its listeners and reject with the run's error when the job fails", async () => {
    const before = listeners();
    const job = controlledJob();
    const close = vi.fn();
    const failure = new Error('stream deleted');
    const running = runUntilSignal(job, { close });
    await started();
    job.finish({ error: failure });
    await expect(running).rejects.toBe(failure);
    expect(close).toHaveBeenCalledTimes(1);
    expect(listeners()).toEqual(before);
  });

  it("should reject with the run's error, not close()'s, when both fail", async () => {
    const job = controlledJob();
    const failure = new Error('stream deleted');
    const running = runUntilSignal(job, { close: () => Promise.reject(new Error('close failed')) });
    await started();
    job.finish({ error: failure });
    await expect(running).rejects.toBe(failure);
  });

  it("should reject with close()'s error when the job ended well but close() failed", async () => {
    const before = listeners();
    const job = controlledJob();
    const closeFailure = new Error('connection already gone');
    const running = runUntilSignal(job, {
      close: () => {
        throw closeFailure;
      },
    });
    await started();
    job.finish({ summary: SUMMARY });
    await expect(running).rejects.toBe(closeFailure);
    expect(listeners()).toEqual(before);
  });

  it('should close and reject when run() throws instead of returning a promise', async () => {
    const before = listeners();
    const failure = new Error('thrown at once');
    const close = vi.fn();
    const job: StoppableJob = {
      inFlight: 0,
      run: () => {
        throw failure;
      },
    };
    await expect(runUntilSignal(job, { close })).rejects.toBe(failure);
    expect(close).toHaveBeenCalledTimes(1);
    expect(listeners()).toEqual(before);
  });
});
