// A job whose decoder reads one value per message, against the real broker: a message with
// several data sections, as the adapter's target publishes it, stops the job with the
// documented error rather than being read by its first section.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  MultiSectionMessageError,
  ProcessingError,
} from '../../src/index.js';
import { encodeMessage } from '../../src/codecs/amqp-message.js';
import { publishAll, rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

const text = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value), 'utf8');

describe('a job reading a three-section message from RabbitMQ', () => {
  it('should stop with a decode ProcessingError naming stream, offset and the three sections', async () => {
    const source = await real.newStream('multi-section-source');
    const target = await real.newStream('multi-section-target');
    const threeSections = encodeMessage({
      body: { type: 'data', sections: [text(1), text(2), text(3)] },
    });
    await publishAll(real.rabbit, source, [jsonMessage(10), threeSections, jsonMessage(20)]);

    const running = aggregate<number>(real.rabbit.source(source))
      .count(3)
      .reduce((a, b) => a + b, 0)
      .to(real.rabbit.target(target, { producer: 'multi-section-job' }))
      .run({ untilCaughtUp: true });
    const error = (await running.catch((e: unknown) => e)) as ProcessingError;
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stream: source, offset: 1n, stage: 'decode' });
    expect(error.cause).toBeInstanceOf(MultiSectionMessageError);
    expect(error.cause).toHaveProperty('sections', 3);
    expect(error.message).toContain('the message has 3 data sections');
    expect(await readAll(real.rabbit, target)).toEqual([]);
  });
});
