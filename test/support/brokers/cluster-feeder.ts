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
        if (last !== undefined) appended = countUpTo(last);
        continue;
      }
      await sleep(FEED_EVERY_MS);
    }
    // A publish that failed (a confirm timed out while a node went) may still have been stored,
    // and the loop may have ended before asking: what the stream holds is the broker's answer
    // (a count one chunk short made the test stop its job 10 results early: CI, 2026-12-02).
    const giveUp = Date.now() + 30_000;
    for (;;) {
      const last = await target.lastPublishingId().catch(() => undefined);
      if (last !== undefined) {
        appended = countUpTo(last);
        break;
      }
      if (Date.now() > giveUp) throw new Error('feeder: the broker never said where it got to');
      await sleep(200);
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

/** The messages appended when `last` is the feeder's last publishing id (0: none yet). */
function countUpTo(last: bigint): number {
  return last === 0n ? 0 : Number(last) + 1;
}
