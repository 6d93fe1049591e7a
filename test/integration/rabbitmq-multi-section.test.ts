// A job whose decoder reads one value per message, against the real broker: a message with
// several data sections, as the adapter's target publishes it, stops the job with the
// documented error rather than being read by its first section.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  MultiSectionMessageError,
  ProcessingError,
} from '../../src/index.js';
import { encodeMessage } from '../../src/codecs/amqp-message.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { publishAll, readAll, uniqueStream } from '../support/rabbitmq.js';

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

async function newStream(prefix: string): Promise<string> {
  const stream = uniqueStream(prefix);
  streams.push(stream);
  await rabbit.createStream(stream);
  return stream;
}

const text = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value), 'utf8');

describe('a job reading a three-section message from RabbitMQ', () => {
  it('should stop with a decode ProcessingError naming stream, offset and the three sections', async () => {
    const source = await newStream('multi-section-source');
    const target = await newStream('multi-section-target');
    const threeSections = encodeMessage({
      body: { type: 'data', sections: [text(1), text(2), text(3)] },
    });
    await publishAll(rabbit, source, [jsonMessage(10), threeSections, jsonMessage(20)]);

    const running = aggregate<number>(rabbit.source(source))
      .count(3)
      .reduce((a, b) => a + b, 0)
      .to(rabbit.target(target, { producer: 'multi-section-job' }))
      .run({ untilCaughtUp: true });
    const error = (await running.catch((e: unknown) => e)) as ProcessingError;
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stream: source, offset: 1n, stage: 'decode' });
    expect(error.cause).toBeInstanceOf(MultiSectionMessageError);
    expect(error.cause).toHaveProperty('sections', 3);
    expect(error.message).toContain('the message has 3 data sections');
    expect(await readAll(rabbit, target)).toEqual([]);
  });
});
