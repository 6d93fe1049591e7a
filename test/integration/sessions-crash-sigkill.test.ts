// The SIGKILL crash test of event-time windows: per-key sessions with a grace over 10,000
// out-of-order clicks of 300 users, run on RabbitMQ as a child process that is killed with
// SIGKILL at random moments (while it recovers, or while it publishes) and restarted each
// time. Every restart recovers the open sessions from the last result it finds in the target;
// the target must end byte-identical to the job's uninterrupted run on the embedded broker.
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeResult } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { killWhilePublishing, runChild } from '../support/children/killed-child.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import {
  clickMessage,
  clicks,
  SESSIONS_PRODUCER,
  sessionsJob,
} from '../support/jobs/sessions-job.js';
import { expectStepsTile } from '../support/results/target-stream.js';
import { bound } from '../support/timing.js';

const MESSAGES = 10_000;
const KILLS = 20;
/** One kill in four comes as soon as the child has recovered, before it publishes anything. */
const KILLS_AT_START = 0.25;
const child = fileURLToPath(new URL('./sessions-crash-child.ts', import.meta.url));
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const messages = clicks(MESSAGES).map(clickMessage);
let source = '';

beforeAll(async () => {
  source = await real.newStream('sessions-source');
  const feeder = real.rabbit.target(source, { producer: 'feeder' });
  const pending: Promise<void>[] = [];
  for (let i = 0; i < MESSAGES; i += 500) {
    pending.push(feeder.publish(BigInt(i + 499), messages.slice(i, i + 500)));
  }
  await Promise.all(pending);
  await feeder.close();
}, bound(120_000));

/** The job's uninterrupted run on the embedded broker, over streams named as on RabbitMQ. */
async function uninterrupted(target: string): Promise<{ bytes: Buffer[]; merges: number }> {
  const broker = new MemoryBroker();
  broker.createStream(source);
  broker.createStream(target);
  broker.append(source, messages);
  const seen = { merges: 0 };
  await sessionsJob(
    broker.source(source),
    broker.target(target, { producer: SESSIONS_PRODUCER }),
    seen,
  ).run({ untilCaughtUp: true });
  return { bytes: broker.messages(target).map((m) => Buffer.from(m.bytes)), merges: seen.merges };
}

describe('the per-key sessions job killed with SIGKILL', () => {
  it(
    'should leave a target byte-identical to an uninterrupted run after 20 kills, every message counted once',
    async () => {
      const target = await real.newStream('sessions-target');
      const expected = await uninterrupted(target);
      const expectedResults = expected.bytes.map((bytes) => decodeResult(bytes));
      // The data has what the test is about: many results, merged sessions, late clicks.
      expect(expectedResults.length).toBeGreaterThan(1000);
      expect(expected.merges).toBeGreaterThan(0);
      expect(expectedResults.some((r) => r.lateCount > 0)).toBe(true);

      const seed = Date.now() % 2 ** 31;
      const sizes = await killWhilePublishing(
        (killAfter) => runChild(child, [url, source, target], killAfter),
        async () => Number(await real.rabbit.source(target).endOffset()),
        {
          kills: KILLS,
          results: expected.bytes.length,
          atStart: KILLS_AT_START,
          random: seededRandom(seed),
        },
      );
      console.log(
        `sessions crash test (seed ${seed}): survived ${KILLS} SIGKILLs (target results after ` +
          `each: ${sizes.join(', ')}; ${expected.bytes.length} results in all, ` +
          `${expected.merges} session merges)`,
      );

      const actual = (await readAll(real.rabbit, target)).map((bytes) => Buffer.from(bytes));
      const results = actual.map((bytes) => decodeResult(bytes));
      // Decoded first, so that a difference reads as results, not bytes.
      expect(results).toEqual(expectedResults);
      expect(actual).toEqual(expected.bytes);
      // No step here has parts: the results themselves tile the offsets.
      expectStepsTile(results);
    },
    bound(300_000),
  );
});
