// A flushed step window on RabbitMQ: the last day of a daily job published at the end of an
// untilCaughtUp run, and its continuation after a restart marked as such, the restart having
// read the flushed result back with the RabbitMQ target's readResult (a 'batch' result's part).
import { describe, expect, it } from 'vitest';
import { aggregate, decodeResult, jsonMessage } from '../../src/index.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

const at = (sensor: string, value: number, hours: number): Uint8Array =>
  jsonMessage({ sensor, value, t: T0 + hours * HOUR } satisfies Reading);

describe('a daily job flushing into RabbitMQ', () => {
  it(
    'marks the continuation of its flushed day after a restart, and counts every message once',
    async () => {
      const source = await real.newStream('flush-source');
      const targetStream = await real.newStream('flush-target');
      const run = async () => {
        const target = real.rabbit.target(targetStream, { producer: 'daily' });
        try {
          await aggregate<Reading>(real.rabbit.source(source))
            .eventTime((r) => r.t)
            .tumbling('1d')
            .key((r) => r.sensor)
            .reduce((sum, r) => sum + r.value, 0)
            .to(target, { pack: 'batch', retryDelayMs: 0, flush: { caughtUp: true } })
            .run({ untilCaughtUp: true });
        } finally {
          await target.close();
        }
      };
      await publishAll(real.rabbit, source, [at('a', 1, 1), at('b', 2, 2), at('a', 4, 25)]);
      await run();
      await publishAll(real.rabbit, source, [at('a', 8, 26), at('b', 16, 27), at('a', 32, 49)]);
      await run();
      const results = (await readAll(real.rabbit, targetStream)).map((m) => decodeResult(m));
      expect(
        results.map((r) => [
          r.lastOffset,
          r.flushed,
          ...r.outputs.map((o) => [o.key, o.value, o.continues]),
        ]),
      ).toEqual([
        // Two outputs: one result of two parts ('batch'), each its own message.
        [1n, false, ['a', 1, false]],
        [1n, false, ['b', 2, false]],
        [2n, true, ['a', 4, false]],
        [4n, false, ['a', 8, true]],
        [4n, false, ['b', 16, true]],
        [5n, true, ['a', 32, false]],
      ]);
    },
    bound(30_000),
  );
});
