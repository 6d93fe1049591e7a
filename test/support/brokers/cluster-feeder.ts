// A writer that keeps appending to a stream on the 3-node cluster while nodes go away, for the
// cluster tests' jobs to read.
import { setTimeout as sleep } from 'node:timers/promises';
import { PublishError, isRetriable } from '../../../src/index.js';
import type { RabbitMQ } from '../../../src/rabbitmq/connection.js';
import { reading } from '../jobs/readings-job.js';

/** Messages per source chunk (one step, one result, of the job). */
export const CHUNK = 30;
/** Pause between two chunks appended by the feeder: about 1,500 messages a second. */
const FEED_EVERY_MS = 20;

/**
 * Appends chunk after chunk of `CHUNK` messages to `stream` until stopped, as an
 * effectively-once writer does: under publishing ids that name the messages, so that after
 * a failure it asks the broker where it got to and goes on from there.
 */
export function feeder(rabbit: RabbitMQ, stream: string) {
  const target = rabbit.target(stream, { producer: 'feeder', confirmTimeoutMs: 5_000 });
  let stopped = false;
  let appended = 0;
  let failures = 0;
  const done = (async () => {
    // stop() sets it, which TypeScript cannot see.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
    while (!stopped) {
      try {
        const i = appended;
        const batch = Array.from({ length: CHUNK }, (_, j) => reading(0, i + j));
        await target.publish(BigInt(i + CHUNK - 1), batch);
        appended = i + CHUNK;
      } catch (error) {
        if (!(error instanceof PublishError) || !isRetriable(error)) throw error;
        failures++;
        await sleep(100);
        const last = await target.lastPublishingId().catch(() => undefined);
        if (last !== undefined) appended = last === 0n ? 0 : Number(last) + 1;
        continue;
      }
      await sleep(FEED_EVERY_MS);
    }
    await target.close();
  })();
  return {
    get appended() {
      return appended;
    },
    get failures() {
      return failures;
    },
    async stop(): Promise<number> {
      stopped = true;
      await done;
      return appended;
    },
  };
}
