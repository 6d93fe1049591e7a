// A transform job's target holds plain user messages: on RabbitMQ they are byte-identical to
// the embedded broker's, each under the publishing id of its source message's offset, and the
// stock rabbitmq-stream-js-client reads each one's body as the transform wrote it.
import { describe, expect, it } from 'vitest';
import { aggregate, jsonMessage, lastWriteId, type Source, type Target } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';

const real = rabbitForTests();
const stock = stockForTests();

interface Payment {
  readonly id: number;
  readonly card: string;
  readonly amount: number;
}

const payments: Payment[] = Array.from({ length: 40 }, (_, id) => ({
  id,
  card: `4111-0000-0000-${String(1000 + id)}`,
  amount: id % 5 === 0 ? 0 : id * 3, // zero amounts are filtered out
}));

const redacting = (source: Source, target: Target) =>
  aggregate<Payment>(source)
    .filter((p) => p.amount > 0)
    .transform((p) => Buffer.from(JSON.stringify({ ...p, card: p.card.slice(-4) })))
    .to(target);

const expectedBodies = payments
  .filter((p) => p.amount > 0)
  .map((p) => JSON.stringify({ ...p, card: p.card.slice(-4) }));

describe('a transform job on RabbitMQ', () => {
  it('should write what the embedded broker writes, readable by the stock client as plain bodies', async () => {
    const [from, to] = [uniqueStream('transform-source'), uniqueStream('transform-target')];
    const messages = payments.map((p) => jsonMessage(p));

    const memory = new MemoryBroker({ now: () => 0 });
    memory.createStream(from);
    memory.createStream(to);
    memory.append(from, messages, { timestamp: 0 });
    await redacting(memory.source(from), memory.target(to, { producer: 'redactor' })).run({
      untilCaughtUp: true,
    });

    await real.rabbit.createStream(from);
    await real.rabbit.createStream(to);
    try {
      await publishAll(real.rabbit, from, messages);
      const target = real.rabbit.target(to, { producer: 'redactor' });
      await redacting(real.rabbit.source(from), target).run({ untilCaughtUp: true });
      // A second run after the end publishes nothing new: the resume point is the last offset's.
      const again = await redacting(real.rabbit.source(from), target).run({ untilCaughtUp: true });
      expect(again).toEqual({ results: 0, duplicates: 0, restarts: 0 });
      expect(await target.lastPublishingId()).toBe(lastWriteId(BigInt(payments.length - 1)));
      await target.close();

      const stored = (await readAll(real.rabbit, to)).map((bytes) => Buffer.from(bytes));
      expect(stored).toEqual(memory.messages(to).map((m) => Buffer.from(m.bytes)));
      expect(await stock.consume(to, expectedBodies.length)).toEqual(expectedBodies);
    } finally {
      await real.rabbit.deleteStream(from);
      await real.rabbit.deleteStream(to);
    }
  });
});
