// The RabbitMQ target's hasPublished(): whether a producer ever stored a result on its
// stream, which a last publishing id of 0 cannot tell (src/rabbitmq/target-history.ts).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { aggregate, jsonMessage } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { publishAll, uniqueStream } from '../support/rabbitmq.js';

const url = inject('rabbitmqUrl');
let rabbit: RabbitMQ;
const streams: string[] = [];

beforeAll(async () => {
  rabbit = await connect(url);
});
afterAll(async () => {
  for (const stream of streams) await rabbit.deleteStream(stream);
  await rabbit.close();
});

async function newStream(): Promise<string> {
  const stream = uniqueStream('history');
  await rabbit.createStream(stream);
  streams.push(stream);
  return stream;
}

/** Sums `{ i }` per count(1) step of `source` into `target` as `producer`. */
async function runJob(source: string, target: string, producer: string): Promise<void> {
  const sink = rabbit.target(target, { producer });
  try {
    await aggregate<{ i: number }>(rabbit.source(source))
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
    const source = await newStream();
    const target = await newStream();
    await publishAll(rabbit, source, [jsonMessage({ i: 7 })]);
    await runJob(source, target, 'only-zero');
    const again = rabbit.target(target, { producer: 'only-zero' });
    try {
      expect(await again.lastPublishingId()).toBe(0n); // the ambiguous answer
      expect(await again.hasPublished()).toBe(true);
    } finally {
      await again.close();
    }
  });

  it("should answer false for an unknown producer on a target full of other producers' results", async () => {
    const source = await newStream();
    const target = await newStream();
    await publishAll(
      rabbit,
      source,
      Array.from({ length: 20 }, (_, i) => jsonMessage({ i })),
    );
    await runJob(source, target, 'billing-a');
    await runJob(source, target, 'billing-b');
    await publishAll(rabbit, target, [jsonMessage({ not: 'a result' })]);
    const unknown = rabbit.target(target, { producer: 'billing-c' });
    const known = rabbit.target(target, { producer: 'billing-b' });
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
    const empty = rabbit.target(target, { producer: 'nobody' });
    try {
      expect(await empty.hasPublished()).toBe(false);
    } finally {
      await empty.close();
    }
  });
});
