// A job that retries and gets nowhere says so, even with the default silent logger: after
// `warnAfterRetries` retries in a row (default 5) one line on stderr, again at twice as many,
// and one when it recovers; through the logger when one is given; never with Infinity, and
// nothing once run() ended. The fault is the embedded broker's persistent retriable one.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { aggregate, lastWriteId, type Logger, type TargetOptions } from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import { brokerWithCountedReadings, type Reading } from '../../support/jobs/memory-job.js';
import { ordersBroker, ordersJob, JOB } from '../../support/jobs/partitioned-job.js';

/** The library's lines written to stderr from now on. */
function stderrLines(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
    const text = String(chunk);
    if (text.startsWith('stream-windows: ')) lines.push(text);
    return true;
  });
  return lines;
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** One result per reading, to 'target' as 'p', retrying at once. */
function job(broker: MemoryBroker, options: TargetOptions = {}) {
  return aggregate<Reading>(broker.source('source'))
    .count(1)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0, ...options });
}

/** Every publish to 'target' refused as retriable, `times` times in a row. */
function refusing(broker: MemoryBroker, times: number): void {
  broker.injectFault({ stream: 'target', atPublish: 1, point: 'refuse-publish', times });
}

const WARNING = new RegExp(
  "^stream-windows: job 'p' \\(source 'source', target 'target'\\) has retried (\\d+) times in a " +
    'row without progress for \\d+\\.\\d s, the last after PublishError PUBLISH_FAILED: publish ' +
    `of id ${lastWriteId(0n)} to stream 'target' failed \\(code 6\\): stream not available; retrying in 0 ms ` +
    '\\(warnAfterRetries: Infinity, or a logger, silences this\\)\\n$',
);

describe('a job retrying without progress', () => {
  it('says nothing before the 5th retry in a row, then one line at the 5th and the 10th, and nothing once run() ended', async () => {
    const lines = stderrLines();
    const broker = brokerWithCountedReadings(3);
    refusing(broker, Infinity);
    const runner = job(broker);
    const stop = new AbortController();
    // At the n-th restart event, the lines of retries 1 to n - 1 are written.
    const linesAtRestart: number[] = [];
    runner.on('restart', ({ restarts }) => {
      linesAtRestart[restarts] = lines.length;
      if (restarts === 12) stop.abort();
    });
    const summary = await runner.run({ signal: stop.signal });

    expect(summary.restarts).toBe(12);
    expect(linesAtRestart.slice(1)).toEqual([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2]);
    expect(lines.map((line) => WARNING.exec(line)?.[1])).toEqual(['5', '10']);
    // The fault still refuses every publish: a loop left running would retry hundreds of
    // times in this wait, and warn at its 20th.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines).toHaveLength(2);
  });

  it('says once it recovered, after how many retries, when a result is confirmed', async () => {
    const lines = stderrLines();
    const broker = brokerWithCountedReadings(3);
    refusing(broker, 7);
    const summary = await job(broker).run({ untilCaughtUp: true });

    expect(summary).toEqual({ results: 3, duplicates: 0, restarts: 7 });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(WARNING);
    expect(lines[1]).toMatch(
      /^stream-windows: job 'p' \(source 'source', target 'target'\) recovered after 7 retries in a row \(\d+\.\d s\) \(warnAfterRetries: Infinity, or a logger, silences this\)\n$/,
    );
  });

  it('counts again from 0 after progress: 4 retries, a result, 4 retries say nothing', async () => {
    const lines = stderrLines();
    const broker = brokerWithCountedReadings(3);
    refusing(broker, 4);
    // Counted from now on too: publishes 1-4 are refused, the 5th stores result 0, 6-9 refused.
    broker.injectFault({ stream: 'target', atPublish: 6, point: 'refuse-publish', times: 4 });
    const summary = await job(broker).run({ untilCaughtUp: true });
    expect(summary.restarts).toBe(8);
    expect(broker.messages('target')).toHaveLength(3);
    expect(lines).toEqual([]);
  });

  it('warns after the count it is given, and never with Infinity', async () => {
    const lines = stderrLines();
    const early = brokerWithCountedReadings(1);
    refusing(early, 2);
    await job(early, { warnAfterRetries: 2 }).run({ untilCaughtUp: true });
    expect(lines).toEqual([
      expect.stringMatching(/^stream-windows: job 'p' .* has retried 2 times in a row without/),
      expect.stringMatching(/^stream-windows: job 'p' .* recovered after 2 retries in a row/),
    ]);

    const silenced = brokerWithCountedReadings(1);
    refusing(silenced, 40);
    const summary = await job(silenced, { warnAfterRetries: Infinity }).run({
      untilCaughtUp: true,
    });
    expect(summary.restarts).toBe(40);
    expect(lines).toHaveLength(2);
  });

  it("goes to the job's logger, at warn, instead of stderr when one is given", async () => {
    const lines = stderrLines();
    const warned: [object, string][] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (fields, message) => warned.push([fields, message]),
      error: () => undefined,
    };
    const broker = brokerWithCountedReadings(1);
    refusing(broker, 5);
    await job(broker, { logger }).run({ untilCaughtUp: true });

    expect(lines).toEqual([]);
    const persistent = warned.filter(([, message]) => /retried|recovered/.test(message));
    expect(persistent.map(([fields]) => fields)).toEqual([
      expect.objectContaining({ source: 'source', target: 'target', producer: 'p', retries: 5 }),
      { source: 'source', target: 'target', producer: 'p', retries: 5 },
    ]);
    expect(persistent[1]?.[1]).toMatch(/^job 'p' .* recovered after 5 retries in a row/);
  });

  it("is said per partition by a partitioned job, naming the partition's loop", async () => {
    const lines = stderrLines();
    const broker = ordersBroker(3, 2);
    broker.injectFault({
      stream: 'rollups',
      producer: `${JOB}@orders-1`,
      atPublish: 1,
      point: 'refuse-publish',
      times: 5,
    });
    await ordersJob(broker, { singleActive: false }).run({ untilCaughtUp: true });
    const loop = `job '${JOB}@orders-1' \\(source 'orders-1', target 'rollups'\\)`;
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^stream-windows: ${loop} has retried 5 times in a row `)),
      expect.stringMatching(new RegExp(`^stream-windows: ${loop} recovered after 5 retries `)),
    ]);
  });
});
