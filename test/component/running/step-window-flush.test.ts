// Quiet sources for step windows: the open step published at the end of an untilCaughtUp run
// (flush.caughtUp) or after a wall-clock silence (flush.idleMs), marked flushed; the window
// stays open, so that the next step in it (in the same run, or after a restart, reopened from
// the flushed result's bounds) has its outputs marked `continues`. Every source message
// lands in exactly one result, crashes included.
import { describe, expect, it, vi } from 'vitest';
import {
  aggregate,
  ConfigError,
  jsonMessage,
  type DecodedResult,
  type TumblingSize,
  type FlushOptions,
  type Logger,
  type Source,
} from '../../../src/index.js';
import { MemoryBroker, type FaultPoint } from '../../../src/memory/index.js';
import { runCrashing } from '../../support/arbitraries/crashes.js';
import { keepingLogger } from '../../support/doubles/keeping-logger.js';
import { reading, results, T0, type Reading } from '../../support/jobs/memory-job.js';
import { bound } from '../../support/timing.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;

function brokerWith(readings: readonly Reading[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  append(broker, readings);
  return broker;
}

/** One chunk per reading: a flush may fall between any two. */
function append(broker: MemoryBroker, readings: readonly Reading[]): void {
  for (const r of readings) broker.append('source', [jsonMessage(r)], { timestamp: T0 });
}

/** Each sensor's daily sum; `dropped` readings (value < 0) are filtered out. */
function dailyJob(
  broker: MemoryBroker,
  {
    flush,
    source = broker.source('source'),
    window = '1d',
    logger,
    allowDefinitionChange,
  }: {
    flush?: FlushOptions;
    source?: Source;
    /** The tumbling window's size: another spec than the daily one, for the same target. */
    window?: TumblingSize;
    logger?: Logger;
    /** Needed to go on under the same producer with another window. */
    allowDefinitionChange?: boolean;
  } = {},
) {
  return aggregate<Reading>(source)
    .filter((r) => r.value >= 0)
    .eventTime((r) => r.t)
    .tumbling(window)
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'daily' }), {
      retryDelayMs: 0,
      ...(flush === undefined ? {} : { flush }),
      ...(logger === undefined ? {} : { logger }),
      ...(allowDefinitionChange === undefined ? {} : { allowDefinitionChange }),
    });
}

const atDay = (sensor: string, value: number, day: number, hour: number): Reading =>
  reading(sensor, value, (day * DAY + hour * HOUR) / 1000);

/** Per result: its offsets, whether flushed, and per output key, value and continues mark. */
const shape = (list: readonly DecodedResult[]) =>
  list.map((r) => ({
    offsets: [r.firstOffset, r.lastOffset],
    flushed: r.flushed,
    outputs: r.outputs.map((o) => [o.key, o.value, o.continues]),
  }));

/** Per window start, per key: the sum of values and of counts over every result given. */
function combined(list: readonly DecodedResult[]): Map<string, { sum: number; count: number }> {
  const byWindowKey = new Map<string, { sum: number; count: number }>();
  for (const result of list) {
    for (const output of result.outputs) {
      const id = `${output.start}/${String(output.key)}`;
      const seen = byWindowKey.get(id) ?? { sum: 0, count: 0 };
      byWindowKey.set(id, {
        sum: seen.sum + (output.value as number),
        count: seen.count + output.count,
      });
    }
  }
  return byWindowKey;
}

const caughtUp = { caughtUp: true };

describe('a flush at the end of an untilCaughtUp run', () => {
  const days = [
    atDay('a', 1, 0, 1),
    atDay('b', 2, 0, 5),
    atDay('a', 3, 1, 2),
    atDay('b', 4, 1, 9),
    atDay('a', 5, 1, 20),
  ];

  it('publishes the last day of a daily job, marked flushed, when the flush is on', async () => {
    const broker = brokerWith(days);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    const list = results(broker);
    expect(shape(list)).toEqual([
      {
        offsets: [0n, 1n],
        flushed: false,
        outputs: [
          ['a', 1, false],
          ['b', 2, false],
        ],
      },
      {
        offsets: [2n, 4n],
        flushed: true,
        outputs: [
          ['a', 8, false],
          ['b', 4, false],
        ],
      },
    ]);
    expect(list[1]).toMatchObject({ windowStart: T0 + DAY, windowEnd: T0 + 2 * DAY });
  });

  it('leaves the last day unpublished without the flush', async () => {
    const broker = brokerWith(days);
    await dailyJob(broker).run({ untilCaughtUp: true });
    expect(results(broker).map((r) => r.windowStart)).toEqual([T0]);
  });

  it('marks every output of the next run’s step of the flushed day as continuing it, and the two together equal the unflushed day', async () => {
    const later = [atDay('a', 10, 1, 21), atDay('c', 7, 1, 22), atDay('a', 100, 2, 0)];
    const broker = brokerWith(days);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, later);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    const flushedRun = results(broker);
    expect(shape(flushedRun).slice(1)).toEqual([
      {
        offsets: [2n, 4n],
        flushed: true,
        outputs: [
          ['a', 8, false],
          ['b', 4, false],
        ],
      },
      {
        offsets: [5n, 6n],
        flushed: false,
        outputs: [
          ['a', 10, true],
          ['c', 7, true],
        ],
      },
      // A later day after the continuation: a fresh step, not marked.
      { offsets: [7n, 7n], flushed: true, outputs: [['a', 100, false]] },
    ]);
    expect(flushedRun[2]).toMatchObject({ windowStart: T0 + DAY, windowEnd: T0 + 2 * DAY });

    // The same data through a job without the flush: day 2 is closed by day 3's reading.
    const reference = brokerWith([...days, ...later]);
    await dailyJob(reference).run({ untilCaughtUp: true });
    const day2 = (list: DecodedResult[]) =>
      [...combined(list)].filter(([id]) => id.startsWith(`${T0 + DAY}/`));
    expect(day2(results(reference))).toHaveLength(3);
    expect(day2(flushedRun)).toEqual(day2(results(reference)));
  });

  it('marks each later part of a day flushed several times as continuing it', async () => {
    const broker = brokerWith([atDay('a', 1, 0, 1)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 2, 0, 2)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 4, 0, 3)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    // Each flush of a continuation is itself continued: all three parts belong to day 0.
    expect(shape(results(broker))).toEqual([
      { offsets: [0n, 0n], flushed: true, outputs: [['a', 1, false]] },
      { offsets: [1n, 1n], flushed: true, outputs: [['a', 2, true]] },
      { offsets: [2n, 2n], flushed: true, outputs: [['a', 4, true]] },
    ]);
    expect(results(broker).map((r) => r.windowStart)).toEqual([T0, T0, T0]);
  });

  it('resumes right after a flushed result at offset 0, so its message is counted once', async () => {
    const broker = brokerWith([atDay('a', 1, 0, 1)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 2, 0, 2), atDay('a', 4, 1, 1)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    expect(shape(results(broker))).toEqual([
      { offsets: [0n, 0n], flushed: true, outputs: [['a', 1, false]] },
      { offsets: [1n, 1n], flushed: false, outputs: [['a', 2, true]] },
      { offsets: [2n, 2n], flushed: true, outputs: [['a', 4, false]] },
    ]);
  });

  it(
    'stops at once when nothing came after a flushed result at offset 0',
    async () => {
      const broker = brokerWith([atDay('a', 1, 0, 1)]);
      await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
      const job = dailyJob(broker, { flush: caughtUp });
      const started: unknown[] = [];
      job.on('started', (event) => started.push(event.from));
      await job.run({ untilCaughtUp: true });
      expect(started).toEqual([1n]);
      expect(results(broker)).toHaveLength(1);
    },
    bound(10_000),
  );

  it('continues the flushed day after a restart even when retention removed the flushed step’s messages from the source', async () => {
    const broker = brokerWith(days);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 10, 1, 21)]);
    broker.truncate('source', 5n);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    expect(shape(results(broker)).at(-1)).toEqual({
      offsets: [5n, 5n],
      flushed: true,
      outputs: [['a', 10, true]],
    });
  });

  it('continues the flushed day after a restart when the flushed step’s last message was filtered out', async () => {
    // Offset 1 (value -1) is filtered: the day's window is known from the result, not from it.
    const broker = brokerWith([atDay('a', 1, 0, 1), atDay('a', -1, 0, 2)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 2, 0, 3)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    expect(shape(results(broker))).toEqual([
      { offsets: [0n, 1n], flushed: true, outputs: [['a', 1, false]] },
      { offsets: [2n, 2n], flushed: true, outputs: [['a', 2, true]] },
    ]);
    expect(results(broker).map((r) => r.filtered)).toEqual([1, 0]);
  });

  it('takes a message before the flushed day as late, as the unflushed day would', async () => {
    const broker = brokerWith([atDay('a', 1, 1, 1)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 2, 0, 1), atDay('a', 4, 1, 2)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    const [, continuation] = results(broker);
    expect(continuation?.late).toEqual([atDay('a', 2, 0, 1)]);
    expect(shape([continuation as DecodedResult])).toEqual([
      { offsets: [1n, 2n], flushed: true, outputs: [['a', 4, true]] },
    ]);
  });

  it('publishes a continuation of nothing but dropped late messages as a result without outputs, in every packing', async () => {
    for (const pack of ['sections', 'batch', 'single'] as const) {
      const broker = brokerWith([atDay('a', 1, 1, 1)]);
      const job = () =>
        aggregate<Reading>(broker.source('source'))
          .eventTime((r) => r.t)
          .tumbling('1d')
          .late('drop')
          .reduce((sum, r) => sum + r.value, 0)
          .to(broker.target('target', { producer: pack }), { pack, flush: caughtUp });
      await job().run({ untilCaughtUp: true });
      append(broker, [atDay('a', 2, 0, 1)]); // late for the flushed day 1
      await job().run({ untilCaughtUp: true });
      expect(
        results(broker).map((r) => [r.lastOffset, r.flushed, r.outputCount, r.lateDropped]),
      ).toEqual([
        [0n, true, 1, 0],
        [1n, true, 0, 1],
      ]);
      // Its window is the flushed day's: what the dropped message was late for.
      expect(results(broker)[1]).toMatchObject({ windowStart: T0 + DAY, windowEnd: T0 + 2 * DAY });
    }
  });

  it('warns, and goes on without the mark, when the flushed result is no longer in the target', async () => {
    const broker = brokerWith(days);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    broker.truncate('target', 2n); // both results gone; the producer's last id stays
    append(broker, [atDay('a', 10, 1, 21)]);
    const logger = keepingLogger();
    await dailyJob(broker, { flush: caughtUp, logger }).run({ untilCaughtUp: true });
    expect(
      logger.lines.filter(([level]) => level === 'warn').map(([, , message]) => message),
    ).toEqual([
      "the producer's last result is not in the target (removed by retention, or the name was used by another job): a window it flushed is not reopened, so the next step is not marked as continuing it",
    ]);
    // Only the mark is lost: the message is in its own result, once.
    expect(shape(results(broker))).toEqual([
      { offsets: [5n, 5n], flushed: true, outputs: [['a', 10, false]] },
    ]);
  });

  it('does not reopen a flushed window written by another window spec', async () => {
    const broker = brokerWith([atDay('a', 1, 0, 1)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    append(broker, [atDay('a', 2, 0, 2)]);
    await dailyJob(broker, { flush: caughtUp, window: '1w', allowDefinitionChange: true }).run({
      untilCaughtUp: true,
    });
    expect(
      results(broker)
        .at(-1)
        ?.outputs.map((o) => o.continues),
    ).toEqual([false]);
  });
});

describe('a crash around a flushed result', () => {
  // Days 0, 1, 2 closed, day 3 flushed: the 4th publish; then one more reading of day 3.
  const crashAtTheFlush = async (point: FaultPoint) => {
    const broker = brokerWith(
      Array.from({ length: 7 }, (_, i) => atDay(i % 2 === 0 ? 'a' : 'b', i + 1, i >> 1, i)),
    );
    const { fired, crashed } = await runCrashing(
      broker,
      { stream: 'target', atPublish: 4, point },
      dailyJob(broker, { flush: caughtUp }),
    );
    // After a confirm the crash comes with the target's next call, which this run never makes;
    // a lost confirm is published again.
    expect({ fired, crashed }).toEqual({
      fired: true,
      crashed: point === 'before-publish' || point === 'after-publish',
    });
    append(broker, [atDay('a', 100, 3, 23)]);
    await dailyJob(broker, { flush: caughtUp }).run({ untilCaughtUp: true });
    const list = results(broker);
    const total = list.flatMap((r) => r.outputs).reduce((s, o) => s + (o.value as number), 0);
    expect(total).toBe(1 + 2 + 3 + 4 + 5 + 6 + 7 + 100);
    expect(list.reduce((n, r) => n + r.messages, 0)).toBe(8);
    return shape(list).slice(3);
  };

  it('loses and duplicates nothing when the job crashes right before the flushed result is stored', async () => {
    expect(await crashAtTheFlush('before-publish')).toEqual([
      { offsets: [6n, 7n], flushed: true, outputs: [['a', 107, false]] },
    ]);
  });

  for (const point of ['after-publish', 'after-confirm', 'lose-confirm'] as const) {
    it(`loses and duplicates nothing, and marks the continuation, when the job crashes right after the flushed result is stored (${point})`, async () => {
      expect(await crashAtTheFlush(point)).toEqual([
        { offsets: [6n, 6n], flushed: true, outputs: [['a', 7, false]] },
        { offsets: [7n, 7n], flushed: true, outputs: [['a', 100, true]] },
      ]);
    });
  }
});

/** The broker's source, whose read ends only on `release()`: it ignores the job's stop. */
function holdingSource(broker: MemoryBroker): { source: Source; release: () => void } {
  const held = new AbortController();
  const inner = broker.source('source');
  return {
    release: () => held.abort(),
    source: {
      stream: inner.stream,
      endOffset: () => inner.endOffset(),
      read: (from) => inner.read(from, held.signal),
    },
  };
}

describe('an idle flush', () => {
  it(
    'publishes the open step after a silence of idleMs, and a later message of the same window as its continuation',
    async () => {
      // Each batch in one chunk: processed at once, so no silence can come between its messages.
      const inOneChunk = (readings: Reading[]) =>
        broker.append(
          'source',
          readings.map((r) => jsonMessage(r)),
          { timestamp: T0 },
        );
      const broker = brokerWith([]);
      inOneChunk([atDay('a', 1, 0, 1), atDay('a', 2, 0, 2)]);
      const job = dailyJob(broker, { flush: { idleMs: 20, oneInstance: true } });
      const controller = new AbortController();
      let published = 0;
      let wake = (): void => undefined;
      job.on('published', () => {
        published++;
        wake();
      });
      const publishedCount = (n: number) =>
        new Promise<void>((resolve) => {
          wake = () => {
            if (published >= n) resolve();
          };
          wake();
        });
      const running = job.run({ signal: controller.signal });
      await publishedCount(1);
      inOneChunk([atDay('a', 4, 0, 3), atDay('a', 8, 1, 1)]);
      await publishedCount(3);
      controller.abort();
      await running;
      expect(shape(results(broker))).toEqual([
        { offsets: [0n, 1n], flushed: true, outputs: [['a', 3, false]] },
        { offsets: [2n, 2n], flushed: false, outputs: [['a', 4, true]] },
        { offsets: [3n, 3n], flushed: true, outputs: [['a', 8, false]] },
      ]);
    },
    bound(10_000),
  );

  it('publishes nothing when its silence ends after the job was stopped', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const broker = brokerWith([atDay('a', 1, 0, 1)]);
      const { source, release } = holdingSource(broker);
      const job = dailyJob(broker, { flush: { idleMs: 1_000, oneInstance: true }, source });
      const controller = new AbortController();
      job.on('read', () => controller.abort());
      const running = job.run({ signal: controller.signal });
      // The silence starts once the chunk is processed: its timer is the only one.
      while (vi.getTimerCount() === 0) await new Promise((resolve) => setImmediate(resolve));
      await vi.advanceTimersByTimeAsync(1_000);
      release();
      await running;
      expect(results(broker)).toEqual([]);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('leaves no timer behind once a run with an idle flush has stopped', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const broker = brokerWith([atDay('a', 1, 0, 1), atDay('a', 2, 1, 1)]);
      await dailyJob(broker, { flush: { idleMs: 60_000, oneInstance: true } }).run({
        untilCaughtUp: true,
      });
      expect(vi.getTimerCount()).toBe(0);
      expect(results(broker)).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('a flush of each step window kind', () => {
  type Kind = 'session' | 'count' | 'compact-gap' | 'compact-every' | 'compact-count';
  const jobOf = (broker: MemoryBroker, window: Kind) => {
    const builder = aggregate<Reading>(broker.source('source')).eventTime((r) => r.t);
    const target = broker.target('target', { producer: 'p' });
    const options = { retryDelayMs: 0, flush: caughtUp };
    const latest = (r: Reading) => r.sensor;
    if (window === 'compact-gap') return builder.compact(latest, { gap: '1h' }).to(target, options);
    if (window === 'compact-every') {
      return builder.compact(latest, { every: '1h' }).to(target, options);
    }
    if (window === 'compact-count') {
      return builder.compact(latest, { count: 3 }).to(target, options);
    }
    const windowed = window === 'session' ? builder.session('1h') : builder.count(3);
    return windowed.reduce((sum, r) => sum + r.value, 0).to(target, options);
  };
  /** Two readings, a flushing run, three more (the last 10 h later), another flushing run. */
  const runTwice = async (window: Kind) => {
    const broker = brokerWith([reading('a', 1, 0), reading('b', 2, 60)]);
    await jobOf(broker, window).run({ untilCaughtUp: true });
    append(broker, [reading('a', 4, 120), reading('a', 8, 180), reading('a', 16, 36_000)]);
    await jobOf(broker, window).run({ untilCaughtUp: true });
    return results(broker).map((r) => ({
      offsets: [r.firstOffset, r.lastOffset],
      flushed: r.flushed,
      window: [r.windowStart, r.windowEnd],
      outputs: r.outputs.map((o) => [o.key, o.value, o.continues]),
    }));
  };

  it('continues a session within its gap after a flush, from the flushed session’s bounds', async () => {
    expect(await runTwice('session')).toEqual([
      {
        offsets: [0n, 1n],
        flushed: true,
        window: [T0, T0 + 60_000 + HOUR],
        outputs: [[null, 3, false]],
      },
      {
        offsets: [2n, 3n],
        flushed: false,
        // The session grown by its continuation: same start.
        window: [T0, T0 + 180_000 + HOUR],
        outputs: [[null, 12, true]],
      },
      {
        offsets: [4n, 4n],
        flushed: true,
        window: [T0 + 36_000_000, T0 + 36_000_000 + HOUR],
        outputs: [[null, 16, false]],
      },
    ]);
  });

  it('starts a fresh count of n after a flushed count window, not marked as a continuation', async () => {
    const list = await runTwice('count');
    expect(list.map((r) => [r.offsets, r.flushed, r.outputs])).toEqual([
      [[0n, 1n], true, [[null, 3, false]]],
      [[2n, 4n], false, [[null, 28, false]]],
    ]);
  });

  it('starts a fresh count after a flushed compaction by count, not marked as a continuation', async () => {
    const list = await runTwice('compact-count');
    expect(list.map((r) => [r.offsets, r.flushed, r.outputs])).toEqual([
      [
        [0n, 1n],
        true,
        [
          ['a', reading('a', 1, 0), false],
          ['b', reading('b', 2, 60), false],
        ],
      ],
      [[2n, 4n], false, [['a', reading('a', 16, 36_000), false]]],
    ]);
  });

  for (const kind of ['compact-gap', 'compact-every'] as const) {
    it(`publishes the latest state of each key at a flush of a compaction (${kind}), and the later states of its step as its continuation`, async () => {
      const list = await runTwice(kind);
      expect(list.map((r) => [r.offsets, r.flushed, r.outputs])).toEqual([
        [
          [0n, 1n],
          true,
          [
            ['a', reading('a', 1, 0), false],
            ['b', reading('b', 2, 60), false],
          ],
        ],
        [[2n, 3n], false, [['a', reading('a', 8, 180), true]]],
        [[4n, 4n], true, [['a', reading('a', 16, 36_000), false]]],
      ]);
    });
  }
});

describe('a transform job with a flush', () => {
  it('is refused where the flush is given: each message that passes is written at once, nothing waits for a flush', () => {
    const broker = brokerWith([]);
    const transform = aggregate<Reading>(broker.source('source'))
      .filter((r) => r.value >= 0)
      .transform((r) => Buffer.from(r.sensor));
    const target = broker.target('target', { producer: 'p' });
    expect(() => transform.to(target, { flush: caughtUp } as never)).toThrow(ConfigError);
    expect(() => transform.to(target, { flush: caughtUp } as never)).toThrow(
      'flush does not apply to a transform',
    );
  });
});

describe('flush options', () => {
  const broker = brokerWith([]);
  const builder = aggregate<Reading>(broker.source('source'))
    .count(1)
    .reduce((a) => a);
  const target = broker.target('target', { producer: 'p' });

  it('refuses an idleMs of 0 with a ConfigError naming it', () => {
    expect(() => builder.to(target, { flush: { idleMs: 0 } })).toThrow(
      new ConfigError('idleMs', 'must be > 0 ms', 0),
    );
    expect(() => builder.to(target, { flush: { idleMs: 0 } })).toThrow(
      'idleMs must be > 0 ms, given: 0',
    );
  });

  it('refuses a caughtUp that is not a boolean', () => {
    expect(() => builder.to(target, { flush: { caughtUp: 'yes' as unknown as boolean } })).toThrow(
      ConfigError,
    );
  });
});
