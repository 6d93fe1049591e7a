import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  fromResults,
  jsonMessage,
  sourceMessage,
  tumbling,
  type OutputValue,
  type PackMode,
} from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  T0,
  type Reading,
} from '../../support/jobs/memory-job.js';

const MINUTE = 60_000;

/**
 * Sensors a and b each read once per 10 s over `minutes` minutes, then one reading that
 * ends the last of those minutes (its own minute stays open: stage 1 gives `minutes` results).
 */
function readings(minutes: number): Reading[] {
  const pairs = Array.from({ length: minutes * 6 }, (_, i) => [
    reading('a', 1, i * 10),
    reading('b', 2, i * 10 + 1),
  ]);
  return [...pairs.flat(), reading('a', 1, minutes * 60)];
}

/** Stage 1: per-sensor per-minute counts of `readings` into 'results'. */
async function stageOne(broker: MemoryBroker, pack: PackMode): Promise<void> {
  broker.createStream('results');
  await aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((r) => r.sensor)
    .reduce((n: number) => n + 1, 0)
    .to(broker.target('results', { producer: 'stage-1' }), { pack })
    .run({ untilCaughtUp: true });
}

const stageTwo = (broker: MemoryBroker, stream = 'results') =>
  aggregate(fromResults<number>(broker.source(stream), { late: 'skip', deadLetters: 'skip' }));

const total = (sum: number, output: OutputValue<number>) => sum + output.value;
/** Shifts b's outputs a minute later: per-value placement would put them in another window. */
const bShifted = (v: OutputValue<number>) => v.start + (v.key === 'b' ? MINUTE : 0);

describe('a job reading results with fromResults', () => {
  it.each<PackMode>(['sections', 'batch'])(
    "should receive every output of every result once as a typed value, with 'pack: %s'",
    async (pack) => {
      const broker = brokerWithReadings(readings(3));
      await stageOne(broker, pack);
      await stageTwo(broker)
        .count(1)
        .key((v) => `${v.key}@${v.start}`)
        .reduce((_: unknown, v: OutputValue<number>) => v, null as unknown)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      const outputs = results(broker).flatMap((r) => r.outputs.map((o) => o.value));
      expect(outputs).toEqual(
        [0, 1, 2].flatMap((m) =>
          ['a', 'b'].map((key) => ({
            type: 'output',
            key,
            start: T0 + m * MINUTE,
            end: T0 + (m + 1) * MINUTE,
            count: 6,
            value: 6,
          })),
        ),
      );
    },
  );

  it("should take the output's window start as default event time", async () => {
    const broker = brokerWithReadings(readings(5));
    await stageOne(broker, 'sections');
    await stageTwo(broker)
      .tumbling('2m')
      .reduce(total, 0)
      .to(broker.target('target', { producer: 'stage-2' }))
      .run({ untilCaughtUp: true });
    const steps = results(broker);
    expect(steps.map((r) => [r.windowStart, r.outputs[0]?.value])).toEqual([
      [T0, 24],
      [T0 + 2 * MINUTE, 24],
    ]);
  });

  it('should give each output of a message its own window start as default event time', async () => {
    // Stage 1 (windows of 10 ms, grace 10 ms): the message at 30 closes [0,10) and [10,20) in
    // ONE result, the one at 55 closes [30,40); stage 2's windows of 10 ms must put each
    // output back in its own window.
    const broker = brokerWithReadings([5, 15, 30, 55].map((ms) => reading('a', 1, ms / 1000)));
    broker.createStream('results');
    await aggregate<Reading>(broker.source('source'))
      .eventTime((r) => r.t - T0)
      .window(tumbling('10ms', { grace: '10ms' }))
      .reduce((n: number) => n + 1, 0)
      .to(broker.target('results', { producer: 'stage-1' }))
      .run({ untilCaughtUp: true });
    expect(results(broker, 'results').map((r) => r.outputs.map((o) => [o.start, o.end]))).toEqual([
      [
        [0, 10],
        [10, 20],
      ],
      [[30, 40]],
    ]);
    await stageTwo(broker)
      .window(tumbling('10ms', { grace: 0 }))
      .reduce(total, 0)
      .to(broker.target('target', { producer: 'stage-2' }))
      .run({ untilCaughtUp: true });
    // The first message's [10,20) output closes [0,10) at once, the second's [30,40) closes
    // [10,20): each window holds one output (not [0,10) both, closed by the second message).
    expect(results(broker).flatMap((r) => r.outputs.map((o) => [o.start, o.end, o.count]))).toEqual(
      [
        [0, 10, 1],
        [10, 20, 1],
      ],
    );
  });

  describe('should never end a step between two values of one message', () => {
    it('tumbling: the first value places the message and the others follow it', async () => {
      const broker = brokerWithReadings(readings(3));
      await stageOne(broker, 'sections');
      await stageTwo(broker)
        .eventTime(bShifted)
        .tumbling('1m')
        .key((v) => String(v.key))
        .reduce(total, 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      const steps = results(broker);
      // One step per stage-1 message (the last stays open), each with both sensors' outputs.
      expect(steps.map((r) => r.lastOffset)).toEqual([0n, 1n]);
      expect(steps.map((r) => r.outputs.map((o) => [o.key, o.value]))).toEqual(
        Array(2).fill([
          ['a', 6],
          ['b', 6],
        ]),
      );
    });

    it('session: the gap is measured between messages, from their first values', async () => {
      const broker = brokerWithReadings(readings(3));
      await stageOne(broker, 'sections');
      await stageTwo(broker)
        .eventTime(bShifted)
        .session('30s')
        .key((v) => String(v.key))
        .reduce(total, 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      expect(results(broker).map((r) => [r.lastOffset, r.outputs.length])).toEqual([
        [0n, 2],
        [1n, 2],
      ]);
    });

    it.each([
      [1, [0n, 1n, 2n, 3n]],
      [2, [1n, 3n]],
    ])('count(%i): counts messages, not values', async (n, lastOffsets) => {
      const broker = brokerWithReadings(readings(4));
      await stageOne(broker, 'sections');
      await stageTwo(broker)
        .count(n)
        .reduce(total, 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      const steps = results(broker);
      expect(steps.map((r) => r.lastOffset)).toEqual(lastOffsets);
      expect(steps.map((r) => r.messages)).toEqual(lastOffsets.map(() => n));
    });

    it('compaction by count: counts messages, not values', async () => {
      const broker = brokerWithReadings(readings(2));
      await stageOne(broker, 'sections');
      await stageTwo(broker)
        .compact((v) => String(v.key), { count: 1 })
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      expect(results(broker).map((r) => [r.lastOffset, r.outputs.map((o) => o.key)])).toEqual([
        [0n, ['a', 'b']],
        [1n, ['a', 'b']],
      ]);
    });

    it("count: with 'pack: batch' each part is a message at its own offset", async () => {
      const broker = brokerWithReadings(readings(2));
      await stageOne(broker, 'batch');
      await stageTwo(broker)
        .count(1)
        .reduce(total, 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      expect(results(broker).map((r) => [r.lastOffset, r.outputs[0]?.value])).toEqual([
        [0n, 6],
        [1n, 6],
        [2n, 6],
        [3n, 6],
      ]);
    });
  });

  describe("with stage 1's late values and dead letters", () => {
    /** Stage 1 gets a late reading (10 s, after 70 s) and a message that is not JSON. */
    async function stageOneWithLateAndDeadLetter(pack: PackMode): Promise<MemoryBroker> {
      const broker = brokerWithReadings([reading('a', 1, 0), reading('a', 1, 70)]);
      broker.append('source', [jsonMessage(reading('a', 1, 10), { creationTime: T0 + 10_000 })]);
      broker.append('source', [sourceMessage('not json')]);
      broker.append('source', [jsonMessage(reading('a', 1, 130), { creationTime: T0 + 130_000 })]);
      broker.createStream('results');
      await aggregate<Reading>(broker.source('source'))
        .tumbling('1m')
        .onError('dead-letter')
        .reduce((n: number) => n + 1, 0)
        .to(broker.target('results', { producer: 'stage-1' }), { pack })
        .run({ untilCaughtUp: true });
      return broker;
    }

    it.each<PackMode>(['sections', 'batch'])(
      "should skip them, count the late ones, or pass both on, as told (pack '%s')",
      async (pack) => {
        const broker = await stageOneWithLateAndDeadLetter(pack);
        const run = async (
          late: 'skip' | 'count' | 'pass',
          deadLetters: 'skip' | 'pass',
          target: string,
        ) => {
          broker.createStream(target);
          await aggregate(fromResults<number>(broker.source('results'), { late, deadLetters }))
            .count(broker.messages('results').length)
            .reduce((kinds: string[], v) => [...kinds, v.type], [])
            .to(broker.target(target, { producer: target }))
            .run({ untilCaughtUp: true });
          const [step] = results(broker, target);
          return [step?.outputs[0]?.value, step?.lateDropped];
        };
        expect(await run('skip', 'skip', 'skipped')).toEqual([['output', 'output'], 0]);
        expect(await run('count', 'skip', 'counted')).toEqual([['output', 'output'], 1]);
        expect(await run('pass', 'pass', 'passed')).toEqual([
          ['output', 'output', 'late', 'dead-letter'],
          0,
        ]);
      },
    );

    it('should publish a step whose messages held nothing it keeps as a result without sections', async () => {
      const broker = await stageOneWithLateAndDeadLetter('batch');
      await stageTwo(broker)
        .count(1)
        .reduce(total, 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      // Parts 2 and 3 of stage 1's second result are its late values and its dead letter.
      expect(results(broker).map((r) => [r.lastOffset, r.messages, r.outputs.length])).toEqual([
        [0n, 1, 1],
        [1n, 1, 1],
        [2n, 1, 0],
        [3n, 1, 0],
      ]);
    });

    it('should pass a late value with its result window and a dead letter whole', async () => {
      const broker = await stageOneWithLateAndDeadLetter('sections');
      await aggregate(
        fromResults<number>(broker.source('results'), { late: 'pass', deadLetters: 'pass' }),
      )
        .count(broker.messages('results').length)
        .reduce((all: unknown[], v) => (v.type === 'output' ? all : [...all, v]), [])
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      expect(results(broker)[0]?.outputs[0]?.value).toEqual([
        {
          type: 'late',
          start: T0 + MINUTE,
          end: T0 + 2 * MINUTE,
          value: reading('a', 1, 10),
        },
        {
          type: 'dead-letter',
          offset: 3n,
          stage: 'decode',
          error: expect.stringContaining('JSON') as unknown,
          message: sourceMessage('not json'),
        },
      ]);
    });
  });

  describe('with a reducer that throws', () => {
    const failOn = (key: string) => (sum: number, v: OutputValue<number>) => {
      if (v.key === key) throw new Error(`no total for ${key}`);
      return sum + v.value;
    };

    it("should dead-letter the whole message under 'dead-letter' when its first value fails", async () => {
      const broker = brokerWithReadings(readings(3));
      await stageOne(broker, 'sections');
      await stageTwo(broker)
        .count(2)
        .onError('dead-letter')
        .reduce(failOn('a'), 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      const [step] = results(broker);
      expect(step?.outputs).toEqual([]);
      expect(step?.deadLetters.map((d) => [d.offset, d.stage])).toEqual([
        [0n, 'reduce'],
        [1n, 'reduce'],
      ]);
    });

    it("should stop even under 'dead-letter' when a later value fails, its first being folded", async () => {
      const broker = brokerWithReadings(readings(3));
      await stageOne(broker, 'sections');
      const running = stageTwo(broker)
        .count(2)
        .onError('dead-letter')
        .reduce(failOn('b'), 0)
        .to(broker.target('target', { producer: 'stage-2' }))
        .run({ untilCaughtUp: true });
      await expect(running).rejects.toMatchObject({
        name: 'ProcessingError',
        stream: 'results',
        offset: 0n,
        stage: 'reduce',
        message: "reduce failed for message at offset 0 of stream 'results': no total for b",
      });
      expect(results(broker)).toEqual([]);
    });
  });

  it('should refuse options that do not say what to do with late values and dead letters', () => {
    const broker = brokerWithReadings([]);
    expect(() =>
      fromResults(broker.source('source'), { late: 'keep', deadLetters: 'skip' } as never),
    ).toThrow(new ConfigError('fromResults late', "must be 'skip', 'count' or 'pass'", 'keep'));
    expect(() => fromResults(broker.source('source'), { late: 'skip' } as never)).toThrow(
      "fromResults deadLetters must be 'skip' or 'pass', given: undefined",
    );
  });

  it('should refuse .decode() on a fromResults source', () => {
    const broker = brokerWithReadings([]);
    expect(() => stageTwo(broker, 'source').decode('msgpack')).toThrow(
      'decode does not apply to a fromResults source',
    );
  });

  it('should refuse .filter() and .map() on a fromResults source, which would be skipped', () => {
    const broker = brokerWithReadings([]);
    expect(() => stageTwo(broker, 'source').filter(() => true)).toThrow(
      'filter does not apply to a fromResults source',
    );
    expect(() => stageTwo(broker, 'source').map((v) => v)).toThrow(
      'map does not apply to a fromResults source',
    );
  });
});
