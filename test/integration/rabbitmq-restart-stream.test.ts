// The broker drops the job's publisher while it publishes: `rabbitmq-streams restart_stream`
// on the target stream, several times, on the real broker. The leader goes away with writes
// in flight; the broker tells the publisher with a metadata update and refuses what follows
// with "publisher does not exist". The job must still end with the uninterrupted run's target.
//
// Needs the local broker of scripts/rabbitmq.sh (the CLI runs in its chroot).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { jsonMessage, type Target } from '../../src/index.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { readingsPartitionJob } from '../support/jobs/readings-job.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const MESSAGES = 30_000;
/** Results the job may publish past the last finished restart: restarts land mid-run. */
const RESULTS_PER_RESTART = 2_000;
const RESTARTS = 4;
/** Delay between the runner handing a result over and the target sending it. */
const HAND_OVER_MS = 20;

const script = fileURLToPath(new URL('../../scripts/rabbitmq.sh', import.meta.url));
const real = rabbitForTests();
const source = real.track(uniqueStream('restart-source'));

beforeAll(async () => {
  await real.rabbit.createStream(source);
  const feeder = real.rabbit.target(source, { producer: 'feeder' });
  const pending: Promise<void>[] = [];
  for (let i = 0; i < MESSAGES; i += 500) {
    const batch = Array.from({ length: 500 }, (_, j) =>
      jsonMessage({ sensor: (i + j) % 7, value: ((i + j) * 7919) % 1000 }),
    );
    pending.push(feeder.publish(BigInt(i + 499), batch));
  }
  await Promise.all(pending);
  await feeder.close();
}, bound(120_000));

async function restartStream(stream: string): Promise<void> {
  await promisify(execFile)(script, ['streams', 'restart_stream', stream], {
    timeout: bound(60_000),
  });
}

/**
 * `target` as the job sees it, with each write handed over `HAND_OVER_MS` later (so that
 * writes the runner issued before it noticed a failure still reach the target after it), and
 * held back while the job is more than `RESULTS_PER_RESTART` writes past the last restart
 * until all restarts are done.
 */
function pacedTarget(target: Target, restartsDone: () => number): Target & { handed: number } {
  const paced = {
    ...forwarding(target),
    handed: 0,
    publish: async (id: bigint, messages: readonly Uint8Array[]) => {
      while (
        restartsDone() < RESTARTS &&
        paced.handed >= (restartsDone() + 1) * RESULTS_PER_RESTART
      ) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      paced.handed++;
      await new Promise((resolve) => setTimeout(resolve, HAND_OVER_MS));
      return target.publish(id, messages);
    },
  };
  return paced;
}

describe('a job whose target stream is restarted while it publishes', () => {
  it(
    `should end with the uninterrupted run's target after ${RESTARTS} restart_stream`,
    async () => {
      const reference = await real.newStream('restart-reference');
      const restarted = await real.newStream('restart-target');

      const plain = real.rabbit.target(reference, { producer: 'job' });
      await readingsPartitionJob(real.rabbit.source(source), plain).run({ untilCaughtUp: true });
      await plain.close();
      const expected = await readAll(real.rabbit, reference);

      let restarts = 0;
      let done = false;
      const target = real.rabbit.target(restarted, { producer: 'job' });
      const paced = pacedTarget(target, () => restarts);
      const running = readingsPartitionJob(real.rabbit.source(source), paced)
        .run({ untilCaughtUp: true })
        .finally(() => (done = true));
      // The job's finally sets `done`, which TypeScript cannot see.
      /* eslint-disable @typescript-eslint/no-unnecessary-condition -- see above */
      while (!done && restarts < RESTARTS) {
        // Once the job is publishing (past the previous restart's results), restart again.
        while (!done && paced.handed <= restarts * RESULTS_PER_RESTART + 200) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        if (done) break;
        await restartStream(restarted);
        restarts++;
      }
      /* eslint-enable @typescript-eslint/no-unnecessary-condition */
      const summary = await running;
      await target.close();
      console.log(
        `restart_stream test: ${restarts} restarts, the job resumed ${summary.restarts} times, ` +
          `${expected.length} results`,
      );

      expect(restarts).toBe(RESTARTS);
      expect(summary.restarts).toBeGreaterThanOrEqual(1);
      const actual = await readAll(real.rabbit, restarted);
      expect(actual.length).toBe(MESSAGES / 3);
      expect(actual.map((b) => Buffer.from(b))).toEqual(expected.map((b) => Buffer.from(b)));
    },
    bound(300_000),
  );
});
