import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  MultiSectionMessageError,
  ProcessingError,
  ResultMessageError,
} from '../../../src/index.js';
import { encodeMessage } from '../../../src/codecs/amqp-message.js';
import { MemoryBroker } from '../../../src/memory/index.js';

const T0 = Date.UTC(2026, 0, 1);
const text = (value: unknown): Uint8Array => Buffer.from(JSON.stringify(value), 'utf8');
/** One message whose body is three data sections, each a JSON number. */
const threeSections = encodeMessage({
  body: { type: 'data', sections: [text(1), text(2), text(3)] },
});

function brokerWith(messages: Uint8Array[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  broker.append('source', messages, { timestamp: T0 });
  return broker;
}

const sum = (broker: MemoryBroker, onError: 'stop' | 'dead-letter') =>
  aggregate<number>(broker.source('source'))
    .count(3)
    .onError(onError)
    .reduce((a, b) => a + b, 0);

describe('a job whose decoder reads one value per message', () => {
  it('should stop with a decode ProcessingError naming stream, offset and the number of sections', async () => {
    const broker = brokerWith([jsonMessage(10), threeSections, jsonMessage(20)]);
    const running = sum(broker, 'stop')
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(ProcessingError);
    await expect(running).rejects.toMatchObject({
      stream: 'source',
      offset: 1n,
      stage: 'decode',
      cause: expect.any(MultiSectionMessageError) as unknown,
      message: expect.stringMatching(
        /^decode failed for message at offset 1 of stream 'source': the message has 3 data sections/,
      ) as unknown,
    });
    expect((await running.catch((e: unknown) => e)) as ProcessingError).toHaveProperty(
      'cause.sections',
      3,
    );
    expect(broker.messages('target')).toEqual([]);
  });

  it("should dead-letter the whole message under 'dead-letter' and fold none of its sections", async () => {
    const broker = brokerWith([jsonMessage(10), threeSections, jsonMessage(20)]);
    await sum(broker, 'dead-letter')
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    const [result, ...rest] = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(rest).toEqual([]);
    expect(result?.messages).toBe(3);
    expect(result?.outputs.map((o) => o.value)).toEqual([30]);
    expect(result?.deadLetters.map((d) => [d.offset, d.stage, d.message])).toEqual([
      [1n, 'decode', threeSections],
    ]);
  });
});

describe("a job that reads another job's results as plain values", () => {
  it('should stop with a decode ProcessingError whose cause names the message a result', async () => {
    const broker = brokerWith([jsonMessage(1), jsonMessage(2), jsonMessage(3)]);
    broker.createStream('stage-2');
    await sum(broker, 'stop')
      .to(broker.target('target', { producer: 'stage-1' })) // the default packing: one msgpack body
      .run({ untilCaughtUp: true });
    const running = aggregate<number>(broker.source('target'))
      .count(1)
      .reduce((a, b) => a + b, 0)
      .to(broker.target('stage-2', { producer: 'stage-2' }))
      .run({ untilCaughtUp: true });
    const error = (await running.catch((e: unknown) => e)) as ProcessingError;
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stream: 'target', offset: 0n, stage: 'decode' });
    expect(error.cause).toBeInstanceOf(ResultMessageError);
    expect(error.cause).toHaveProperty('format', '2');
    expect((error.cause as ResultMessageError).cause).toBeInstanceOf(SyntaxError);
    expect(error.message).toMatch(
      /^decode failed for message at offset 0 of stream 'target': the message is a result of another job \(result format '2'\), .*read results of another job with fromResults\(source\); once it is known to be bad input, 'stream-windows skip --source target --target stage-2 --producer stage-2 --offset 0' lets the next start dead-letter it$/,
    );
    expect(broker.messages('stage-2')).toEqual([]);
  });

  it("should keep the decoder's own error for a message that is not a result", async () => {
    const broker = brokerWith([Buffer.from('not an AMQP message')]);
    const error = (await sum(broker, 'stop')
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e)) as ProcessingError;
    expect(error).toMatchObject({ offset: 0n, stage: 'decode' });
    expect(error.cause).not.toBeInstanceOf(ResultMessageError);
  });
});
