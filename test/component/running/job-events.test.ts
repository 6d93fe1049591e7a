import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  lastWriteId,
  PublishError,
  StreamWindowsError,
  type JobEventMap,
  JOB_EVENT_NAMES,
  type JobEventName,
  type Logger,
  type Runner,
  type Target,
} from '../../../src/index.js';
import { JobEvents } from '../../../src/api/job-events.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { keepingLogger } from '../../support/doubles/keeping-logger.js';
import {
  brokerWithCountedReadings,
  brokerWithReadings,
  countJob,
  reading,
  T0,
  type Reading,
} from '../../support/jobs/memory-job.js';

const NAMES = JOB_EVENT_NAMES;

/** Every event the job emits, in order, as [name, event]. */
function record(job: Runner<unknown, unknown, unknown>): [JobEventName, unknown][] {
  const seen: [JobEventName, unknown][] = [];
  for (const name of NAMES) job.on(name, (event) => seen.push([name, event]));
  return seen;
}

/** The target, whose `failing`-th publish is lost with its connection: not stored, retriable. */
function losing(target: Target, failing: number): Target {
  let publishes = 0;
  return {
    ...forwarding(target),
    publish: async (id, messages) => {
      if (++publishes === failing) throw new PublishError(target.stream, id, true, 'lost');
      await target.publish(id, messages);
    },
  };
}

describe('the events of a job', () => {
  it('should report start, reads, confirms, catching up and the stop in that order', async () => {
    const memory = brokerWithCountedReadings(3);
    const job = countJob(memory);
    const seen = record(job as Runner<unknown, unknown, unknown>);
    await job.run({ untilCaughtUp: true });
    const names = seen.map(([name]) => name);
    // Confirms interleave with reads as they land; the rest of the order is fixed.
    expect(names.filter((name) => name !== 'published')).toEqual([
      'started',
      'read',
      'read',
      'read',
      'caughtUp',
      'stopped',
    ]);
    expect(names.filter((name) => name === 'published')).toHaveLength(3);
    expect(names.indexOf('published')).toBeGreaterThan(names.indexOf('read'));
    expect(names.lastIndexOf('published')).toBeLessThan(names.indexOf('stopped'));
    expect(seen[0]?.[1]).toEqual({
      lastPublishingId: 0n,
      from: 'first',
      sourceEnd: 3n,
      restarts: 0,
    });
    expect(seen.find(([name]) => name === 'caughtUp')?.[1]).toEqual({ offset: 3n });
    const published = seen.filter(([name]) => name === 'published').map(([, e]) => e);
    expect(published.map((e) => (e as JobEventMap['published']).lastOffset)).toEqual([0n, 1n, 2n]);
    expect(seen.at(-1)?.[1]).toEqual({
      summary: { results: 3, duplicates: 0, restarts: 0 },
      error: undefined,
    });
  });

  it('should carry late, dropped, filtered and window end of each step', async () => {
    const memory = brokerWithReadings([
      reading('a', 1, 1),
      reading('a', 2, 61),
      reading('a', 3, 2), // late: its window (0..60 s) closed at the message before
      reading('b', -1, 62),
      reading('a', 4, 125),
    ]);
    const job = aggregate<Reading>(memory.source('source'))
      .filter((r) => r.value >= 0)
      .tumbling('1m')
      .key((r) => r.sensor)
      .late('drop')
      .reduce((sum, r) => sum + r.value, 0)
      .to(memory.target('target', { producer: 'p' }));
    const published: JobEventMap['published'][] = [];
    job.on('published', (event) => published.push(event));
    await job.run({ untilCaughtUp: true });
    expect(
      published.map(({ processingMs, ...event }) => {
        expect(processingMs).toBeGreaterThanOrEqual(0);
        return event;
      }),
    ).toEqual([
      {
        firstOffset: 0n,
        lastOffset: 0n,
        messages: 1,
        outputs: 1,
        late: 0,
        lateDropped: 0,
        filtered: 0,
        deadLetters: 0,
        duplicate: false,
        windowEnd: T0 + 60_000,
      },
      {
        firstOffset: 1n,
        lastOffset: 3n,
        messages: 3,
        outputs: 1,
        late: 0,
        lateDropped: 1,
        filtered: 1,
        deadLetters: 0,
        duplicate: false,
        windowEnd: T0 + 120_000,
      },
    ]);
  });

  it('should report a restart with its cause and delay, then start again from the broker', async () => {
    const memory = brokerWithCountedReadings(3);
    const job = countJob(memory, losing(memory.target('target', { producer: 'p' }), 2));
    const seen = record(job as Runner<unknown, unknown, unknown>);
    await job.run({ untilCaughtUp: true });
    const restart = seen.find(([name]) => name === 'restart')?.[1] as JobEventMap['restart'];
    expect(restart).toMatchObject({ delayMs: 0, restarts: 1 });
    expect(restart.error).toBeInstanceOf(PublishError);
    const starts = seen.filter(([name]) => name === 'started').map(([, e]) => e);
    expect(starts).toEqual([
      { lastPublishingId: 0n, lastOffset: undefined, from: 'first', sourceEnd: 3n, restarts: 0 },
      // Offset 0's step was stored; the publish of offset 1 was lost: it goes on from there.
      { lastPublishingId: lastWriteId(0n), lastOffset: 0n, from: 1n, sourceEnd: 3n, restarts: 1 },
    ]);
    expect(Object.keys(starts[0] as object)).toContain('lastOffset');
    // Nothing published twice: the second start reads from offset 1.
    const published = seen
      .filter(([name]) => name === 'published')
      .map(([, e]) => e as JobEventMap['published'])
      .map((e) => [e.lastOffset, e.duplicate]);
    expect(published).toEqual([
      [0n, false],
      [1n, false],
      [2n, false],
    ]);
  });

  it("should type a restart's error as an Error, the library's own at run time", async () => {
    // Checked by tsc (npm test's typecheck): on an `unknown` error these lines do not compile.
    expectTypeOf<JobEventMap['restart']['error']>().toEqualTypeOf<Error>();
    const memory = brokerWithCountedReadings(2);
    const job = countJob(memory, losing(memory.target('target', { producer: 'p' }), 1));
    const causes: string[] = [];
    job.on('restart', (e) => {
      expect(e.error).toBeInstanceOf(StreamWindowsError);
      causes.push(`${e.error.name}: ${e.error.message}`);
    });
    await job.run({ untilCaughtUp: true });
    expect(causes).toEqual([expect.stringMatching(/^PublishError: .*lost/)]);
  });

  it('should run a listener added with prepend before those added earlier', () => {
    const events = new JobEvents(() => undefined);
    const order: string[] = [];
    events.on('caughtUp', () => order.push('first added'));
    events.on('caughtUp', () => order.push('prepended'), { prepend: true });
    events.on('caughtUp', () => order.push('last added'));
    events.emit('caughtUp', { offset: 1n });
    expect(order).toEqual(['prepended', 'first added', 'last added']);
  });

  it('should report the error a job stopped on', async () => {
    const memory = brokerWithCountedReadings(1);
    memory.append('source', [new Uint8Array([0x00, 0x53, 0x75, 0xa0, 0x01, 0x7b])]); // '{'
    const job = countJob(memory);
    const stops: JobEventMap['stopped'][] = [];
    job.on('stopped', (event) => stops.push(event));
    const error = await job.run({ untilCaughtUp: true }).catch((e: unknown) => e);
    expect(stops).toEqual([{ summary: { results: 1, duplicates: 0, restarts: 0 }, error }]);
  });

  it('should keep a job going when a listener throws, and log it', async () => {
    const memory = brokerWithCountedReadings(2);
    const logger = keepingLogger();
    const job = aggregate<Reading>(memory.source('source'))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(memory.target('target', { producer: 'p' }), { logger });
    job.on('published', () => {
      throw new Error('observer bug');
    });
    await expect(job.run({ untilCaughtUp: true })).resolves.toMatchObject({ results: 2 });
    const errors = logger.lines.filter(([level]) => level === 'error');
    expect(errors.map(([, , message]) => message)).toEqual([
      "a listener of 'published' threw; the job goes on",
      "a listener of 'published' threw; the job goes on",
    ]);
  });

  it('should stop calling a listener once it is removed', async () => {
    const memory = brokerWithCountedReadings(3);
    const job = countJob(memory);
    let calls = 0;
    const off = job.on('read', () => {
      if (++calls === 2) off();
    });
    await job.run({ untilCaughtUp: true });
    expect(calls).toBe(2);
  });

  it('should not ask the source for its end when nobody waits for it', async () => {
    const memory = brokerWithCountedReadings(2);
    const source = memory.source('source');
    let asked = 0;
    const counting = {
      // eslint-disable-next-line @typescript-eslint/no-misused-spread -- its fields; its methods are bound below
      ...source,
      stream: source.stream,
      read: source.read.bind(source),
      endOffset: () => (asked++, source.endOffset()),
    };
    const job = aggregate<Reading>(counting)
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(memory.target('target', { producer: 'p' }));
    const abort = new AbortController();
    job.on('published', (e) => e.lastOffset === 1n && abort.abort());
    await job.run({ signal: abort.signal });
    expect(asked).toBe(0);
  });
});

describe('the logger of a job', () => {
  it('should log the start with its resume point, restarts and the stop, offsets as strings', async () => {
    const memory = brokerWithCountedReadings(3);
    const logger = keepingLogger();
    const job = aggregate<Reading>(memory.source('source'))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(losing(memory.target('target', { producer: 'p' }), 2), { logger, retryDelayMs: 0 });
    await job.run({ untilCaughtUp: true });
    expect(logger.lines.map(([level, , message]) => `${level}: ${message}`)).toEqual([
      "info: job started from the broker's last publishing id",
      'warn: resuming from the broker in 0 ms after a retriable error',
      "info: job started from the broker's last publishing id",
      'info: job caught up',
      'info: job stopped',
    ]);
    expect(logger.lines[0]?.[1]).toEqual({
      source: 'source',
      target: 'target',
      producer: 'p',
      lastPublishingId: '0',
      from: 'first',
      sourceEnd: '3',
    });
  });

  it("should refuse a logger without pino's methods, naming what is missing", () => {
    const memory = brokerWithCountedReadings(0);
    const build = aggregate(memory.source('source'))
      .count(1)
      .reduce(() => 0, 0);
    expect(() =>
      build.to(memory.target('target', { producer: 'p' }), {
        logger: { info: () => undefined } as unknown as Logger,
      }),
    ).toThrow(
      new ConfigError(
        'logger',
        "must have pino's methods debug, info, warn and error (missing: debug, warn, error)",
        {},
      ).message.replace(', given: {}', ''),
    );
  });
});
