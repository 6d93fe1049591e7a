// Crash tests against the real broker: the aggregator runs as a child process over a source
// stream of 100,000 messages, is killed with SIGKILL at random moments and restarted each
// time; the target stream must then equal one uninterrupted run's, byte for byte.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeResult, jsonMessage } from '../../src/index.js';
import { killWhilePublishing, runChild } from '../support/children/killed-child.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import type { CrashEvent } from './crash-child.js';
import { bound } from '../support/timing.js';

const MESSAGES = 100_000;
const KILLS = 10;
const child = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const source = real.track(uniqueStream('crash-source'));

beforeAll(async () => {
  await real.rabbit.createStream(source);
  // 100 sensors, 100 messages per second of event time: 1,000 one-second windows.
  const feeder = real.rabbit.target(source, { producer: 'feeder' });
  const start = Date.UTC(2026, 0, 1);
  const pending: Promise<void>[] = [];
  for (let i = 0; i < MESSAGES; i += 500) {
    const batch = Array.from({ length: 500 }, (_, j) => {
      const event: CrashEvent = { sensor: (i + j) % 100, value: ((i + j) * 7919) % 1000 };
      return jsonMessage(event, { creationTime: start + (i + j) * 10 });
    });
    pending.push(feeder.publish(BigInt(i + 499), batch));
  }
  await Promise.all(pending);
  await feeder.close();
}, bound(120_000));

describe('the aggregator killed with SIGKILL', () => {
  it(
    'should leave a target equal to an uninterrupted run after 10 kills, with no duplicate and no loss',
    async () => {
      const reference = await real.newStream('crash-reference');
      const crashed = await real.newStream('crash-target');

      const started = Date.now();
      expect(await runChild(child, [url, source, reference])).toBe(false);
      const uninterruptedMs = Date.now() - started;
      const expected = await readAll(real.rabbit, reference);

      // Kill each child at a random moment while it publishes.
      const seed = Date.now() % 2 ** 31;
      const sizes = await killWhilePublishing(
        (killAfter) => runChild(child, [url, source, crashed], killAfter),
        async () => Number(await real.rabbit.source(crashed).endOffset()),
        { kills: KILLS, results: expected.length, random: seededRandom(seed) },
      );
      console.log(
        `crash test (seed ${seed}): survived ${KILLS} SIGKILLs (target results after each: ` +
          `${sizes.join(', ')}; ${expected.length} results in all; ` +
          `uninterrupted run ${uninterruptedMs} ms)`,
      );

      const actual = await readAll(real.rabbit, crashed);
      expect(actual.map((b) => Buffer.from(b))).toEqual(expected.map((b) => Buffer.from(b)));
      const results = actual.map((bytes) => decodeResult(bytes));
      expect(results).toHaveLength(999); // the 1,000th window is still open
      for (let i = 1; i < results.length; i++) {
        // Publishing ids (= last offsets) strictly increase, and steps tile the offsets.
        expect(results[i]?.lastOffset).toBeGreaterThan(results[i - 1]?.lastOffset ?? -1n);
        expect(results[i]?.firstOffset).toBe((results[i - 1]?.lastOffset ?? -1n) + 1n);
      }
      expect(results.reduce((n, r) => n + r.messages, 0)).toBe(MESSAGES - 100);
    },
    bound(600_000),
  );
});
