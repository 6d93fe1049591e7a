// pack: 'single': every section of a step in ONE data section, canonical msgpack or JSON.
import { decode as decodeMsgpack } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage } from '../../../src/codecs/amqp-message.js';
import { encodeCanonical } from '../../../src/codecs/canonical-msgpack.js';
import { encodeCanonicalJson } from '../../../src/codecs/canonical-json.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import type { StepResult } from '../../../src/result-format/step-result.js';
import {
  aggregate,
  CodecError,
  ConfigError,
  decodeResult,
  ProcessingError,
  sourceMessage,
} from '../../../src/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  type Reading,
} from '../../support/jobs/memory-job.js';

const metadata = { source: 'in', producer: 'p', window: 'tumbling(1m)' };
const step: StepResult<unknown> = {
  firstOffset: 7n,
  lastOffset: 9n,
  messages: 3,
  window: { start: 0, end: 60_000 },
  outputs: [{ key: 'a', count: 1, value: { big: 2n ** 60n, gone: undefined, list: [undefined] } }],
  late: [],
  lateDropped: 0,
  filtered: 0,
  deadLetters: [{ offset: 9n, stage: 'decode', error: 'bad', message: Uint8Array.of(0, 255, 7) }],
};

const bodyOf = (bytes: Uint8Array): Uint8Array => {
  const message = decodeMessage(bytes);
  if (message.body?.type !== 'data' || message.body.sections.length !== 1) {
    throw new Error('expected one data section');
  }
  return message.body.sections[0] as Uint8Array;
};

describe("a job packing its results as 'single'", () => {
  const readings = [
    reading('a', 1, 0),
    reading('b', 2, 1),
    reading('a', 3, 2),
    reading('a', 4, 61), // closes the first minute
  ];
  const run = async (format?: 'msgpack' | 'json') => {
    const broker = brokerWithReadings(readings);
    await aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .key((r) => r.sensor)
      .reduce((total, r) => total + r.value, 0)
      .to(broker.target('target', { producer: 'p' }), { pack: 'single', format })
      .run({ untilCaughtUp: true });
    return broker;
  };

  it('should write every output of a step in one message with one data section', async () => {
    const broker = await run();
    const [message, ...rest] = broker.messages('target');
    expect(rest).toHaveLength(0);
    const amqp = decodeMessage(message?.bytes as Uint8Array);
    expect(amqp.properties?.contentType).toBe('application/msgpack');
    expect(decodeMsgpack(bodyOf(message?.bytes as Uint8Array))).toEqual([
      {
        type: 'output',
        key: 'a',
        start: readings[0]?.t,
        end: (readings[0]?.t ?? 0) + 60_000,
        count: 2,
        value: 4,
      },
      {
        type: 'output',
        key: 'b',
        start: readings[0]?.t,
        end: (readings[0]?.t ?? 0) + 60_000,
        count: 1,
        value: 2,
      },
    ]);
    expect(
      results(broker).map((r) => [r.lastOffset, r.part, r.outputs.map((o) => o.value)]),
    ).toEqual([[2n, undefined, [4, 2]]]);
  });

  it('should be the packing of a job that names none: what every client reads whole', async () => {
    const broker = brokerWithReadings(readings);
    await aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .key((r) => r.sensor)
      .reduce((total, r) => total + r.value, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    const [bytes] = broker.messages('target').map((m) => m.bytes);
    expect(decodeMessage(bytes as Uint8Array).properties?.contentType).toBe('application/msgpack');
    expect(decodeMsgpack(bodyOf(bytes as Uint8Array))).toHaveLength(2);
  });

  it('should write plain JSON that JSON.parse reads, and decodeResult reads it the same', async () => {
    const broker = await run('json');
    const bytes = broker.messages('target')[0]?.bytes as Uint8Array;
    expect(decodeMessage(bytes).properties?.contentType).toBe('application/json');
    const start = readings[0]?.t as number;
    expect(Buffer.from(bodyOf(bytes)).toString('utf8')).toBe(
      `[{"count":2,"end":${start + 60_000},"key":"a","start":${start},"type":"output","value":4},` +
        `{"count":1,"end":${start + 60_000},"key":"b","start":${start},"type":"output","value":2}]`,
    );
    const msgpack = decodeResult((await run()).messages('target')[0]?.bytes as Uint8Array);
    expect(decodeResult(bytes)).toEqual(msgpack);
  });

  it('should stop with an encode ProcessingError on a value JSON cannot say', async () => {
    const broker = brokerWithReadings(readings);
    const job = aggregate<Reading>(broker.source('source'))
      .tumbling('1m')
      .reduce(() => Number.NaN, 0)
      .to(broker.target('target', { producer: 'p' }), { pack: 'single', format: 'json' });
    const error = await job.run({ untilCaughtUp: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stage: 'encode', offset: 2n, stream: 'source' });
    expect(broker.messages('target')).toHaveLength(0);
  });

  it('should refuse a format with another packing, and an unknown format', () => {
    const broker = brokerWithReadings([]);
    const builder = aggregate(broker.source('source'))
      .count(1)
      .reduce((a) => a);
    const target = broker.target('target', { producer: 'p' });
    expect(() => builder.to(target, { pack: 'batch', format: 'json' })).toThrow(
      "format applies to pack 'single' only, given: 'json'",
    );
    expect(() => builder.to(target, { pack: 'sections', format: 'msgpack' })).toThrow(ConfigError);
    expect(() => builder.to(target, { pack: 'single', format: 'xml' as 'json' })).toThrow(
      "format must be 'msgpack' or 'json', given: 'xml'",
    );
  });
});

describe("the README's worked example packed as 'single'", () => {
  const example: StepResult<number> = {
    firstOffset: 0n,
    lastOffset: 2n,
    messages: 3,
    window: { start: 1767268800000, end: 1767268860000 },
    outputs: [
      { key: 's1', count: 2, value: 42 },
      { key: 's2', count: 1, value: 18 },
    ],
    late: [],
    lateDropped: 0,
    filtered: 0,
    deadLetters: [],
  };
  const exampleMetadata = {
    source: 'sensors',
    producer: 'rollups-1m',
    window: 'tumbling(1m)',
    definition: '{"source":"sensors","window":"tumbling(1m)"}',
  };

  it('should be the bytes the README shows', () => {
    const [msgpack] = encodeResult(example, exampleMetadata, 'single', 'msgpack');
    const [json] = encodeResult(example, exampleMetadata, 'single', 'json');
    expect([msgpack?.length, json?.length]).toEqual([515, 572]);
    expect(
      Buffer.from(msgpack as Uint8Array)
        .subarray(0, 33)
        .toString('hex'),
    ).toBe('005373c01c07404040404040a313' + Buffer.from('application/msgpack').toString('hex'));
    expect(
      Buffer.from(bodyOf(msgpack as Uint8Array))
        .subarray(0, 1)
        .toString('hex'),
    ).toBe('92');
    expect(Buffer.from(bodyOf(json as Uint8Array)).toString('utf8')).toBe(
      '[{"count":2,"end":1767268860000,"key":"s1","start":1767268800000,"type":"output","value":42},' +
        '{"count":1,"end":1767268860000,"key":"s2","start":1767268800000,"type":"output","value":18}]',
    );
  });
});

describe("the 'single' JSON encoding", () => {
  it('should write bigints as decimal strings, binary as base64 and leave undefined out', () => {
    const [bytes] = encodeResult(step, metadata, 'single', 'json');
    expect(JSON.parse(Buffer.from(bodyOf(bytes as Uint8Array)).toString('utf8'))).toEqual([
      {
        type: 'output',
        key: 'a',
        start: 0,
        end: 60_000,
        count: 1,
        value: { big: '1152921504606846976', list: [null] },
      },
      {
        type: 'dead-letters',
        records: [{ offset: '9', stage: 'decode', error: 'bad', message: 'AP8H' }],
      },
    ]);
    const decoded = decodeResult(bytes as Uint8Array);
    expect(Array.from(decoded.deadLetters[0]?.message ?? [])).toEqual([0, 255, 7]);
    expect(decoded.deadLetters[0]?.offset).toBe(9n);
  });

  it('should give the same bytes for equal values built in another key order', () => {
    expect(encodeCanonicalJson({ b: 1, a: [{ y: 2n, x: new Date(0) }] })).toEqual(
      encodeCanonicalJson({ a: [{ x: new Date(0), y: 2n }], b: 1 }),
    );
    expect(Buffer.from(encodeCanonicalJson({ b: -0, a: 'é"' })).toString('utf8')).toBe(
      '{"a":"é\\"","b":0}',
    );
  });

  it('should refuse what JSON cannot carry with a CodecError', () => {
    for (const value of [
      Number.POSITIVE_INFINITY,
      new Map(),
      new Set(),
      () => 1,
      Symbol('s'),
      new Date(Number.NaN),
    ]) {
      expect(() => encodeCanonicalJson([value])).toThrow(CodecError);
    }
  });

  it("should refuse an own '__proto__' key, as canonical msgpack does", () => {
    const value = JSON.parse('{"__proto__": 1}') as unknown;

    expect(() => encodeCanonicalJson(value)).toThrow("cannot encode an object key '__proto__'");
    expect(() => encodeCanonical(value)).toThrow("cannot encode an object key '__proto__'");
  });

  it('should refuse a single result whose content-type, section count or base64 is wrong', () => {
    const [good] = encodeResult(step, metadata, 'single', 'json');
    const message = decodeMessage(good as Uint8Array);
    const variants = [
      { ...message, properties: { contentType: 'text/plain' } },
      {
        ...message,
        body: {
          type: 'data' as const,
          sections: [bodyOf(good as Uint8Array), bodyOf(good as Uint8Array)],
        },
      },
      { ...message, body: { type: 'data' as const, sections: [Buffer.from('{"type":"output"}')] } },
      {
        ...message,
        body: {
          type: 'data' as const,
          sections: [
            encodeCanonicalJson([
              {
                type: 'dead-letters',
                records: [{ offset: '1', stage: 'decode', error: '', message: 'A*==' }],
              },
            ]),
          ],
        },
      },
    ];
    for (const variant of variants) {
      expect(() => decodeResult(encodeMessage(variant))).toThrow(CodecError);
    }
  });

  it('should keep a dead-lettered source message whole through JSON', async () => {
    const broker = brokerWithReadings([reading('a', 1, 0)]);
    broker.append('source', [sourceMessage('not json')]);
    await aggregate<Reading>(broker.source('source'))
      .onError('dead-letter')
      .count(2)
      .reduce((total, r) => total + r.value, 0)
      .to(broker.target('target', { producer: 'p' }), { pack: 'single', format: 'json' })
      .run({ untilCaughtUp: true });
    const [result] = results(broker);
    expect(result?.deadLetters.map((d) => [d.offset, Buffer.from(d.message)])).toEqual([
      [1n, Buffer.from(sourceMessage('not json'))],
    ]);
  });
});
