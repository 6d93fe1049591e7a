// How much a job over several inputs holds for an input far ahead of the others, on the embedded
// broker: an input whose messages wait in the merge for a lagging input stops being read once it
// holds `maxBufferedPerInput` of them, and is read again when the others catch up; the results
// are those of a job that read everything at once. Issue 30: memory held for a lagging input is
// bounded (a stage 2 started over one partition's day of backlog held all of it).
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  mergeInputs,
  type MergeOptions,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { keepingLogger, type KeepingLogger } from '../../support/doubles/keeping-logger.js';
import { until } from '../../support/jobs/outbox-fixture.js';
import { bound } from '../../support/timing.js';

interface Reading {
  readonly at: number;
  readonly value: number;
}

const MESSAGES = 2_000;
const CHUNK = 50;
const MAX_BUFFERED = 100;
/** One reading every 100 ms of event time: 200 s, 200 windows of a second. */
const TIMES = Array.from({ length: MESSAGES }, (_, i) => i * 100);

function append(broker: MemoryBroker, stream: string, times: readonly number[]): void {
  for (let i = 0; i < times.length; i += CHUNK) {
    broker.append(
      stream,
      times.slice(i, i + CHUNK).map((at) => jsonMessage({ at, value: 1 })),
    );
  }
}

function brokerWith(a: readonly number[], b: readonly number[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  for (const stream of ['a', 'b', 'totals']) broker.createStream(stream);
  append(broker, 'a', a);
  append(broker, 'b', b);
  return broker;
}

function totalsJob(broker: MemoryBroker, options: MergeOptions, logger?: KeepingLogger) {
  return aggregate<Reading>(mergeInputs([broker.source('a'), broker.source('b')], options))
    .eventTime((reading) => reading.at)
    .tumbling(1_000, { grace: 0 })
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(broker.target('totals', { producer: 'totals' }), logger === undefined ? {} : { logger });
}

/** The messages each input's read delivered, from the job's 'read' events. */
function readCounts(job: ReturnType<typeof totalsJob>): Map<string, number> {
  const counts = new Map<string, number>();
  job.on('read', ({ stream, messages }) => {
    counts.set(stream ?? '', (counts.get(stream ?? '') ?? 0) + messages);
  });
  return counts;
}

const targetBytes = (broker: MemoryBroker) =>
  broker.messages('totals').map((message) => Buffer.from(message.bytes));

const waitsFor = (stream: string) => (line: readonly [string, object, string]) =>
  line[2].includes('its read waits') && (line[1] as { input?: string }).input === stream;

describe('an input far ahead of the others in a job over several inputs', () => {
  it('stops being read once it holds maxBufferedPerInput messages, and the results are those of reading all at once', async () => {
    const expected = brokerWith(TIMES, TIMES);
    await totalsJob(expected, { idleAfter: 'never' }).run({ untilCaughtUp: true });

    // Input b says nothing yet, and holds every window open: a's messages wait in the merge.
    const broker = brokerWith(TIMES, []);
    const logger = keepingLogger();
    const job = totalsJob(
      broker,
      { idleAfter: 'never', maxBufferedPerInput: MAX_BUFFERED },
      logger,
    );
    const read = readCounts(job);
    const stop = new AbortController();
    const running = job.run({ signal: stop.signal });
    try {
      await until(() => logger.lines.some(waitsFor('a')), bound(10_000), "a's read waiting");
      // Its read goes on only until it holds the bound, which a chunk may pass.
      expect(read.get('a')).toBeGreaterThanOrEqual(MAX_BUFFERED);
      expect(read.get('a')).toBeLessThanOrEqual(MAX_BUFFERED + CHUNK);

      append(broker, 'b', TIMES);
      const windows = expected.messages('totals').length;
      await until(
        () => broker.messages('totals').length >= windows,
        bound(10_000),
        `${windows} results`,
      );
      expect(read.get('a')).toBe(MESSAGES);
      // b caught up, and a was read again.
      expect(
        logger.lines.some(
          ([, fields, message]) =>
            message.includes('read again') && (fields as { input?: string }).input === 'a',
        ),
      ).toBe(true);
    } finally {
      stop.abort();
      await running;
    }
    expect(targetBytes(broker)).toEqual(targetBytes(expected));
  });

  it('is not taken as silent while its read waits, and a silent input is still left out', async () => {
    const broker = brokerWith(TIMES, []);
    const logger = keepingLogger();
    const job = totalsJob(broker, { idleAfter: 50, maxBufferedPerInput: MAX_BUFFERED }, logger);
    const stop = new AbortController();
    const running = job.run({ signal: stop.signal });
    try {
      // b is left out: a's windows close by its own times, up to its last open one.
      await until(
        () => broker.messages('totals').length >= 1,
        bound(10_000),
        'a result once b is left out',
      );
      await until(
        () => totalsOf(broker) === MESSAGES - 10,
        bound(10_000),
        "a's readings but its last open window's",
      );
    } finally {
      stop.abort();
      await running;
    }
    const leftOut = logger.lines
      .filter((line) => line[2].startsWith('an input delivered nothing'))
      .map((line) => (line[1] as { input?: string }).input);
    expect(leftOut).toEqual(['b']);
  });

  it('refuses a maxBufferedPerInput that is not an integer >= 1, naming it', () => {
    const broker = brokerWith([], []);
    for (const given of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() =>
        mergeInputs([broker.source('a'), broker.source('b')], { maxBufferedPerInput: given }),
      ).toThrow(/maxBufferedPerInput must be an integer >= 1/);
    }
  });
});

/** The readings counted over every result's outputs. */
function totalsOf(broker: MemoryBroker): number {
  let total = 0;
  for (const message of broker.messages('totals')) {
    for (const output of decodeResult<number>(message.bytes).outputs) total += output.value;
  }
  return total;
}
