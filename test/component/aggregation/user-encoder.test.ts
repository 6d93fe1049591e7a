import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError, lastWriteId, ProcessingError } from '../../../src/index.js';
import {
  brokerWithReadings,
  reading,
  userWrites,
  type Reading,
} from '../../support/jobs/memory-job.js';

const target = (broker: ReturnType<typeof brokerWithReadings>) =>
  broker.target('target', { producer: 'p' });
const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('a transform job', () => {
  it("should write one user message per source message, each under its step's last-write publishing id", async () => {
    const broker = brokerWithReadings([reading('a', 1, 0), reading('b', 2, 1), reading('c', 3, 2)]);
    const summary = await aggregate<Reading>(broker.source('source'))
      .filter((r) => r.sensor !== 'b')
      .transform((r) => bytes(JSON.stringify({ sensor: r.sensor, value: '***' })))
      .to(target(broker))
      .run({ untilCaughtUp: true });

    expect(summary.results).toBe(2);
    expect(userWrites(broker)).toEqual([
      { publishingId: lastWriteId(0n), bodies: ['{"sensor":"a","value":"***"}'] },
      // The filtered message at offset 1 belongs to this step, which ends at offset 2.
      { publishingId: lastWriteId(2n), bodies: ['{"sensor":"c","value":"***"}'] },
    ]);
  });

  it('should stop with a map error naming the offset when its function throws', async () => {
    const broker = brokerWithReadings([reading('a', 1, 0), reading('b', 2, 1)]);
    const error = await aggregate<Reading>(broker.source('source'))
      .transform((r) => {
        if (r.sensor === 'b') throw new Error('cannot redact');
        return bytes(r.sensor);
      })
      .to(target(broker))
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stage: 'map', offset: 1n });
    expect(userWrites(broker)).toEqual([{ publishingId: lastWriteId(0n), bodies: ['a'] }]);
  });

  it('should refuse the dead-letter policy, which has no place in a target of user messages', () => {
    const broker = brokerWithReadings([]);
    expect(() =>
      aggregate(broker.source('source'))
        .onError('dead-letter')
        .transform(() => bytes('x')),
    ).toThrow(ConfigError);
  });
});

describe('a user encoder', () => {
  it("should write an array of bodies as one batch under the step's one publishing id", async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 2, 1),
      reading('a', 3, 2),
      reading('c', 4, 3),
    ]);
    await aggregate<Reading>(broker.source('source'))
      .count(3)
      .key((r) => r.sensor)
      .reduce((sum, r) => sum + r.value, 0)
      .to(target(broker), {
        encode: (result) => result.outputs.map((o) => bytes(`${String(o.key)}=${o.value}`)),
      })
      .run({ untilCaughtUp: true });

    expect(userWrites(broker)).toEqual([{ publishingId: lastWriteId(2n), bodies: ['a=4', 'b=2'] }]);
  });

  it('should batch many small events into one envelope per count window', async () => {
    const broker = brokerWithReadings([1, 2, 3, 4, 5, 6, 7].map((v) => reading('s', v, v)));
    await aggregate<Reading>(broker.source('source'))
      .count(3)
      .reduce(
        (all: number[], r) => [...all, r.value],
        () => [],
      )
      .to(target(broker), {
        encode: (result) => bytes(JSON.stringify({ events: result.outputs[0]?.value })),
      })
      .run({ untilCaughtUp: true });

    expect(userWrites(broker)).toEqual([
      { publishingId: lastWriteId(2n), bodies: ['{"events":[1,2,3]}'] },
      { publishingId: lastWriteId(5n), bodies: ['{"events":[4,5,6]}'] },
    ]);
  });

  it('should stop with an encode error at the step end when it returns something other than bytes', async () => {
    for (const wrong of [[], 'text', [bytes('a'), 'b']]) {
      const broker = brokerWithReadings([reading('a', 1, 0)]);
      const error = await aggregate<Reading>(broker.source('source'))
        .count(1)
        .reduce((sum, r) => sum + r.value, 0)
        .to(target(broker), { encode: () => wrong as never })
        .run({ untilCaughtUp: true })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProcessingError);
      expect(error).toMatchObject({ stage: 'encode', offset: 0n });
      expect(String(error)).toContain('encode must return a Uint8Array or a non-empty array');
      expect(userWrites(broker)).toEqual([]);
    }
  });

  it('should refuse a pack option beside its own encode, and an encode that is no function', () => {
    const broker = brokerWithReadings([]);
    const job = aggregate<Reading>(broker.source('source'))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0);
    expect(() => job.to(target(broker), { pack: 'batch', encode: () => bytes('x') })).toThrow(
      "pack applies to the result format, not to your own encode, given: 'batch'",
    );
    expect(() => job.to(target(broker), { encode: 'json' as never })).toThrow(
      'encode must be a function',
    );
  });
});
