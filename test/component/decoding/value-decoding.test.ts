// Every decode format the builder offers, read through a job: the value each one hands the
// reducer, and the refusal of an unknown one.
import { encode as encodeMsgpack } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { aggregate, decodeResult, sourceMessage, type ValueFormat } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

/** The value of one count(1) step over a source holding `body`, reduced with `describe`. */
async function decoded<T>(
  body: Uint8Array | string,
  format: ValueFormat<T>,
  describe: (value: T) => unknown,
): Promise<unknown> {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  broker.append('source', [sourceMessage(body)]);
  await aggregate<T>(broker.source('source'))
    .decode(format)
    .count(1)
    .reduce((_: unknown, value: T) => describe(value), null)
    .to(broker.target('target', { producer: 'p' }))
    .run({ untilCaughtUp: true });
  const [message] = broker.messages('target');
  return message === undefined ? undefined : decodeResult(message.bytes).outputs[0]?.value;
}

describe('decode formats', () => {
  it('should decode a msgpack body', async () => {
    const body = encodeMsgpack({ sensor: 's1', celsius: 20.5 });
    await expect(decoded(body, 'msgpack', (v) => v)).resolves.toEqual({
      sensor: 's1',
      celsius: 20.5,
    });
  });

  it('should hand over a raw body as a copy of its bytes', async () => {
    const copy = (v: Uint8Array) => ({
      bytes: Array.from(v),
      own: v.byteOffset === 0 && v.buffer.byteLength === v.length,
    });
    await expect(decoded(new Uint8Array([1, 2, 3]), 'raw', copy)).resolves.toEqual({
      bytes: [1, 2, 3],
      own: true,
    });
  });

  it('should hand a decode function exactly the body bytes', async () => {
    const format = (body: Uint8Array) => Buffer.from(body).toString('hex');
    await expect(decoded(new Uint8Array([0xca, 0xfe]), format, (v) => v)).resolves.toBe('cafe');
  });

  it('should decode a string body', async () => {
    await expect(decoded('héllo', 'string', (v) => v)).resolves.toBe('héllo');
  });

  it('should reject an unknown format, naming it', () => {
    const broker = new MemoryBroker();
    broker.createStream('source');
    expect(() => aggregate(broker.source('source')).decode('yaml' as 'json')).toThrow(
      "decode format must be 'json', 'msgpack', 'string', 'raw' or a function of the body bytes, given: 'yaml'",
    );
  });
});
