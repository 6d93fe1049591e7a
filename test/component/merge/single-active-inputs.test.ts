// A job over several inputs run by two instances, its first input read as a single active
// consumer on the embedded broker: the group elects the instance that reads every input; the
// other stands by, reading none, and takes over from the last result when the first goes.
import { describe, expect, it } from 'vitest';
import { aggregate, fromResults, jsonMessage, mergeInputs } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { until } from '../../support/jobs/outbox-fixture.js';
import { bound } from '../../support/timing.js';

interface Reading {
  readonly at: number;
  readonly value: number;
}

function append(broker: MemoryBroker, stream: string, times: readonly number[]): void {
  broker.append(
    stream,
    times.map((at) => jsonMessage({ at, value: at % 7 })),
  );
}

/** Readings every 250 ms of event time from `from` to before `to`, in chunks of 4. */
function appendRange(broker: MemoryBroker, stream: string, from: number, to: number): void {
  for (let at = from; at < to; at += 1_000) {
    append(
      broker,
      stream,
      [0, 250, 500, 750].map((ms) => at + ms),
    );
  }
}

function brokerWithInputs(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  for (const stream of ['a', 'b', 'totals']) broker.createStream(stream);
  return broker;
}

/** The job, its first input read in group 'totals'. */
function instance(broker: MemoryBroker) {
  const inputs = [broker.source('a', { singleActive: { name: 'totals' } }), broker.source('b')];
  const job = aggregate<Reading>(mergeInputs(inputs, { idleAfter: 'never' }))
    .eventTime((reading) => reading.at)
    .tumbling(1_000, { grace: 0 })
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(broker.target('totals', { producer: 'totals' }));
  const seen = { read: 0, readOfB: 0, standby: 0, started: 0 };
  job.on('read', ({ stream }) => {
    seen.read++;
    if (stream === 'b') seen.readOfB++;
  });
  job.on('standby', () => {
    seen.standby++;
  });
  job.on('started', () => {
    seen.started++;
  });
  return { job, seen };
}

const bytes = (broker: MemoryBroker) =>
  broker.messages('totals').map((message) => Buffer.from(message.bytes));

describe('a job over several inputs run by two instances', () => {
  it('is read by the instance its first input group activates; the other takes over from the last result', async () => {
    const expected = brokerWithInputs();
    appendRange(expected, 'a', 0, 20_000);
    appendRange(expected, 'b', 0, 20_000);
    await instance(expected).job.run({ untilCaughtUp: true });
    const windows = expected.messages('totals').length;
    expect(windows).toBe(19); // the last window stays open

    const broker = brokerWithInputs();
    appendRange(broker, 'a', 0, 10_000);
    appendRange(broker, 'b', 0, 10_000);
    const first = instance(broker);
    const second = instance(broker);
    const stopFirst = new AbortController();
    const stopSecond = new AbortController();
    const runningFirst = first.job.run({ signal: stopFirst.signal });
    await until(() => broker.messages('totals').length >= 9, bound(10_000), 'nine results');
    const runningSecond = second.job.run({ signal: stopSecond.signal });
    try {
      await until(() => second.seen.standby === 1, bound(10_000), 'the second standing by');
      // Standing by, it reads no input, nor its resume point.
      appendRange(broker, 'b', 10_000, 15_000);
      await until(
        () => first.seen.readOfB >= 15,
        bound(10_000),
        "the first reading b's new chunks",
      );
      expect(second.seen).toEqual({ read: 0, readOfB: 0, standby: 1, started: 0 });

      stopFirst.abort();
      await runningFirst;
      await until(() => second.seen.started === 1, bound(10_000), 'the second activated');
      appendRange(broker, 'a', 10_000, 20_000);
      appendRange(broker, 'b', 15_000, 20_000);
      await until(
        () => broker.messages('totals').length >= windows,
        bound(10_000),
        `${windows} results`,
      );
    } finally {
      stopFirst.abort();
      stopSecond.abort();
    }
    await runningSecond;
    expect(bytes(broker)).toEqual(bytes(expected));
  });

  it('stops at once while it stands by, and leaves the group', async () => {
    const broker = brokerWithInputs();
    appendRange(broker, 'a', 0, 3_000);
    const first = instance(broker);
    const second = instance(broker);
    const stopFirst = new AbortController();
    const stopSecond = new AbortController();
    const runningFirst = first.job.run({ signal: stopFirst.signal });
    const runningSecond = second.job.run({ signal: stopSecond.signal });
    try {
      await until(
        () =>
          first.seen.started + second.seen.started === 1 &&
          first.seen.standby + second.seen.standby === 2,
        bound(10_000),
        'one activated, one standing by',
      );
      const standing = first.seen.started === 1 ? stopSecond : stopFirst;
      standing.abort();
      await (standing === stopFirst ? runningFirst : runningSecond);
      expect(broker.consumerGroup('a', 'totals').members).toHaveLength(1);
    } finally {
      stopFirst.abort();
      stopSecond.abort();
    }
    await Promise.all([runningFirst, runningSecond]);
    expect(broker.consumerGroup('a', 'totals').members).toEqual([]);
  });

  it('elects stage 2 over results the same way: its first result stream in the group', async () => {
    const broker = brokerWithInputs();
    for (const stream of ['results-a', 'results-b', 'expected']) broker.createStream(stream);
    appendRange(broker, 'a', 0, 12_000);
    appendRange(broker, 'b', 0, 12_000);
    /** Stage 1 over `input`: the sum of its readings per second. */
    const stageOne = (input: 'a' | 'b') =>
      aggregate<Reading>(broker.source(input))
        .eventTime((reading) => reading.at)
        .tumbling(1_000, { grace: 0 })
        .reduce((sum, reading) => sum + reading.value, 0)
        .to(broker.target(`results-${input}`, { producer: `stage-1-${input}` }))
        .run({ untilCaughtUp: true });
    const options = { late: 'skip', deadLetters: 'skip' } as const;
    const stageTwo = (target: string, group: boolean) => {
      const first = group
        ? broker.source('results-a', { singleActive: { name: 'stage-2' } })
        : broker.source('results-a');
      const inputs = [
        fromResults<number>(first, options),
        fromResults<number>(broker.source('results-b'), options),
      ];
      const job = aggregate(mergeInputs(inputs, { idleAfter: 'never' }))
        .tumbling(2_000, { grace: 0 })
        .reduce((sum, output) => sum + output.value, 0)
        .to(broker.target(target, { producer: 'stage-2' }));
      const seen = { published: 0, standby: 0, started: 0 };
      job.on('published', () => {
        seen.published++;
      });
      job.on('standby', () => {
        seen.standby++;
      });
      job.on('started', () => {
        seen.started++;
      });
      return { job, seen };
    };

    // Stage 1 over a only: the active instance reads, and holds every window for b.
    await stageOne('a');
    const active = stageTwo('totals', true);
    const standby = stageTwo('totals', true);
    const stopActive = new AbortController();
    active.job.on('published', () => stopActive.abort()); // it goes after its first result
    const runningActive = active.job.run({ signal: stopActive.signal });
    await until(() => active.seen.started === 1, bound(10_000), 'the first activated');
    const runningStandby = standby.job.run({ untilCaughtUp: true });
    await until(() => standby.seen.standby === 1, bound(10_000), 'the second standing by');
    await stageOne('b');
    await runningActive;
    await runningStandby;

    await stageTwo('expected', false).job.run({ untilCaughtUp: true });
    // Stage 1 closed 11 windows of a second on each; the merge passes the outputs before 10 s.
    expect(broker.messages('expected')).toHaveLength(4);
    // Each wrote a share, none twice.
    expect(active.seen.published).toBeGreaterThan(0);
    expect(standby.seen.published).toBeGreaterThan(0);
    expect(active.seen.published + standby.seen.published).toBe(4);
    expect(bytesOf(broker, 'totals')).toEqual(bytesOf(broker, 'expected'));
  });
});

const bytesOf = (broker: MemoryBroker, stream: string) =>
  broker.messages(stream).map((message) => Buffer.from(message.bytes));
