// The RabbitMQ target's hasPublished(): whether a producer ever stored a result on its
// stream, which a last publishing id of 0 cannot tell (src/rabbitmq/write/target-history.ts).
import { describe, expect, it } from 'vitest';
import { aggregate, jsonMessage, lastWriteId } from '../../src/index.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { resultMessages } from '../support/results/stored-results.js';

const real = rabbitForTests();

const newStream = () => real.newStream('history');

/** Sums `{ i }` per count(1) step of `source` into `target` as `producer`. */
async function runJob(source: string, target: string, producer: string): Promise<void> {
  const sink = real.rabbit.target(target, { producer });
  try {
    await aggregate<{ i: number }>(real.rabbit.source(source))
      .count(1)
      .reduce((sum, e) => sum + e.i, 0)
      .to(sink)
      .run({ untilCaughtUp: true });
  } finally {
    await sink.close();
  }
}

describe("the RabbitMQ target's publishing history", () => {
  it('should answer true for a producer whose only result has publishing id 0', async () => {
    const target = await newStream();
    // As an earlier version published the result of offset 0: under id 0, its offset.
    const earlier = real.rabbit.target(target, { producer: 'only-zero' });
    await earlier.publish(0n, resultMessages('only-zero', 0n));
    await earlier.close();
    const again = real.rabbit.target(target, { producer: 'only-zero' });
    try {
      expect(await again.lastPublishingId()).toBe(0n); // the ambiguous answer
      expect(await again.hasPublished()).toBe(true);
    } finally {
      await again.close();
    }
  });

  it("should answer true for a job's result of offset 0, whose publishing id is no longer 0", async () => {
    const source = await newStream();
    const target = await newStream();
    await publishAll(real.rabbit, source, [jsonMessage({ i: 7 })]);
    await runJob(source, target, 'first-zero');
    const again = real.rabbit.target(target, { producer: 'first-zero' });
    try {
      expect(await again.lastPublishingId()).toBe(lastWriteId(0n));
      expect(await again.hasPublished()).toBe(true);
    } finally {
      await again.close();
    }
  });

  it("should answer false for an unknown producer on a target full of other producers' results", async () => {
    const source = await newStream();
    const target = await newStream();
    await publishAll(
      real.rabbit,
      source,
      Array.from({ length: 20 }, (_, i) => jsonMessage({ i })),
    );
    await runJob(source, target, 'billing-a');
    await runJob(source, target, 'billing-b');
    await publishAll(real.rabbit, target, [jsonMessage({ not: 'a result' })]);
    const unknown = real.rabbit.target(target, { producer: 'billing-c' });
    const known = real.rabbit.target(target, { producer: 'billing-b' });
    try {
      expect(await unknown.lastPublishingId()).toBe(0n);
      expect(await unknown.hasPublished()).toBe(false);
      expect(await known.hasPublished()).toBe(true);
    } finally {
      await unknown.close();
      await known.close();
    }
  });

  it('should answer false on an empty target', async () => {
    const target = await newStream();
    const empty = real.rabbit.target(target, { producer: 'nobody' });
    try {
      expect(await empty.hasPublished()).toBe(false);
    } finally {
      await empty.close();
    }
  });
});
