import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  lastWriteId,
  ProcessingError,
} from '../../../src/index.js';
import {
  brokerWithReadings,
  reading,
  T0,
  userWrites,
  type Reading,
} from '../../support/jobs/memory-job.js';

const target = (broker: ReturnType<typeof brokerWithReadings>) =>
  broker.target('target', { producer: 'p' });

/** A user encoder that shows a step's counts, so a test sees where every message went. */
const counts = (result: {
  firstOffset: bigint;
  lastOffset: bigint;
  messages: number;
  filtered: number;
  deadLetters: readonly { stage: string }[];
  outputs: readonly { key: unknown; count: number; value: unknown }[];
}) =>
  Buffer.from(
    JSON.stringify({
      offsets: `${result.firstOffset}..${result.lastOffset}`,
      messages: result.messages,
      filtered: result.filtered,
      dead: result.deadLetters.map((d) => d.stage),
      outputs: result.outputs.map((o) => [o.key, o.count, o.value]),
    }),
  );

describe('filter and map before windowing', () => {
  it('should count filtered messages in the result format, so sw-messages still adds up', async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 2, 10), // filtered out
      reading('a', 3, 60), // opens the next window
    ]);
    await aggregate<Reading>(broker.source('source'))
      .filter((r) => r.sensor === 'a')
      .tumbling('1m')
      .reduce((sum, r) => sum + r.value, 0)
      .to(target(broker))
      .run({ untilCaughtUp: true });

    const [only, ...more] = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(more).toEqual([]);
    expect(only).toMatchObject({ messages: 2, filtered: 1, outputs: [{ count: 1, value: 1 }] });
  });

  it('should keep a filtered message in its step and count it as filtered, not aggregated', async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 2, 10), // filtered out
      reading('a', 3, 20),
      reading('b', 4, 30), // filtered out, the step's last message
      reading('a', 5, 60), // opens the next window
    ]);
    await aggregate<Reading>(broker.source('source'))
      .filter((r) => r.sensor === 'a')
      .tumbling('1m')
      .reduce((sum, r) => sum + r.value, 0)
      .to(target(broker), { encode: counts })
      .run({ untilCaughtUp: true });

    expect(userWrites(broker)).toEqual([
      {
        publishingId: lastWriteId(3n),
        bodies: [
          JSON.stringify({
            offsets: '0..3',
            messages: 4,
            filtered: 2,
            dead: [],
            outputs: [[null, 2, 4]],
          }),
        ],
      },
    ]);
  });

  it('should count values that pass in a count window, and end the step at the one that completes it', async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 2, 1),
      reading('b', 3, 2),
      reading('a', 4, 3),
      reading('b', 5, 4),
    ]);
    await aggregate<Reading>(broker.source('source'))
      .filter((r) => r.sensor === 'a')
      .count(2)
      .reduce((sum, r) => sum + r.value, 0)
      .to(target(broker), { encode: counts })
      .run({ untilCaughtUp: true });

    const [write] = userWrites(broker);
    expect(write?.publishingId).toBe(lastWriteId(3n));
    expect(JSON.parse(write?.bodies[0] ?? '')).toMatchObject({
      offsets: '0..3',
      messages: 4,
      filtered: 2,
      outputs: [[null, 2, 5]],
    });
  });

  it('should apply filters and maps in builder order, with event time and key read from the mapped value', async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 20, 1),
      reading('a', 3, 2),
      reading('b', 40, 3),
      reading('c', 0, 3600), // in the next window of the mapped event time: closes the first
    ]);
    await aggregate<Reading>(broker.source('source'))
      .map((r) => ({ who: r.sensor.toUpperCase(), amount: r.value * 10, at: r.t }))
      .filter((m) => m.amount < 300) // sees the mapped value: drops b's 400
      .map((m) => ({ ...m, amount: m.amount + 1 }))
      .eventTime((m) => m.at + 3_600_000) // an hour later: the window bounds show it
      .key((m) => m.who)
      .tumbling('1h')
      .reduce((sum, m) => sum + m.amount, 0)
      .to(target(broker), {
        encode: (result) =>
          Buffer.from(JSON.stringify([result.window, result.outputs, result.filtered])),
      })
      .run({ untilCaughtUp: true });

    expect(userWrites(broker).map((w) => JSON.parse(w.bodies[0] ?? '') as unknown)).toEqual([
      [
        { start: T0 + 3_600_000, end: T0 + 7_200_000 },
        [
          { key: 'A', count: 2, value: 11 + 31 },
          { key: 'B', count: 1, value: 201 },
        ],
        1,
      ],
    ]);
  });

  it('should report a throwing filter or map as its own stage, and dead-letter it under dead-letter', async () => {
    for (const stage of ['filter', 'map'] as const) {
      const broker = brokerWithReadings([reading('a', 1, 0), reading('a', 2, 1)]);
      const failing = (r: Reading) => {
        if (r.value === 1) throw new Error('not this one');
        return r;
      };
      const start = aggregate<Reading>(broker.source('source'));
      const piped = stage === 'filter' ? start.filter(failing) : start.map(failing);

      const stopped = piped
        .count(5)
        .reduce((sum, r) => sum + r.value, 0)
        .to(target(broker));
      const error = await stopped.run({ untilCaughtUp: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProcessingError);
      expect(error).toMatchObject({ stage, offset: 0n, stream: 'source' });
      expect(String(error)).toContain('not this one');

      await piped
        .onError('dead-letter')
        .count(1)
        .reduce((sum, r) => sum + r.value, 0)
        .to(target(broker), { encode: counts })
        .run({ untilCaughtUp: true });
      expect(userWrites(broker).map((w) => JSON.parse(w.bodies[0] ?? '') as unknown)).toEqual([
        { offsets: '0..0', messages: 1, filtered: 0, dead: [stage], outputs: [] },
        { offsets: '1..1', messages: 1, filtered: 0, dead: [], outputs: [[null, 1, 2]] },
      ]);
    }
  });

  it('should refuse a filter or map after eventTime or key, which read the value they give', () => {
    const broker = brokerWithReadings([]);
    const timed = aggregate<Reading>(broker.source('source')).eventTime((r) => r.t);
    // The types refuse these too (test/unit/dsl/builder-stage.test.ts); this is for JavaScript.
    // @ts-expect-error -- .map() after .eventTime()
    expect(() => timed.map((r) => r.value)).toThrow(ConfigError);
    // @ts-expect-error -- .filter() after .eventTime()
    expect(() => timed.filter(() => true)).toThrow(
      'map must come before .eventTime() and .key()'.replace('map', 'filter'),
    );
    const mapped = aggregate<Reading>(broker.source('source')).map((r) => r.value);
    expect(() => mapped.decode('msgpack')).toThrow('decode must come before .filter() and .map()');
    expect(() => mapped.filter('yes' as never)).toThrow('filter must be a function');
  });
});
