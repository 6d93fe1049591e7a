import { encode as encodeMsgpack } from '@msgpack/msgpack';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  ProcessingError,
  SchemaValidationError,
  sourceMessage,
  type PipelineBuilder,
  type StandardSchemaV1,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

interface Reading {
  readonly sensor: string;
  readonly value: number;
}

/** A hand-written Standard Schema validator, as zod or valibot would present one. */
const readingSchema: StandardSchemaV1<unknown, Reading> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) => {
      const issues: StandardSchemaV1.Issue[] = [];
      const record = (typeof value === 'object' && value !== null ? value : {}) as Record<
        string,
        unknown
      >;
      if (typeof record.sensor !== 'string') {
        issues.push({ message: 'expected a string', path: ['sensor'] });
      }
      if (typeof record.value !== 'number') {
        issues.push({ message: 'expected a number', path: [{ key: 'value' }] });
      }
      if (issues.length > 0) return { issues };
      return { value: { sensor: record.sensor as string, value: record.value as number } };
    },
  },
};

function brokerWith(bodies: readonly Uint8Array[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  if (bodies.length > 0) {
    broker.append(
      'source',
      bodies.map((body) => sourceMessage(body)),
      { timestamp: 0 },
    );
  }
  return broker;
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('decode with a Standard Schema validator', () => {
  it('should stop with a decode error naming the offset, the issues and their paths', async () => {
    const broker = brokerWith([json({ sensor: 'a', value: 1 }), json({ sensor: 7 })]);
    const error = await aggregate(broker.source('source'))
      .decode('json', readingSchema)
      .count(5)
      .reduce((sum, r) => sum + r.value, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stage: 'decode', offset: 1n, stream: 'source' });
    expect((error as ProcessingError).cause).toBeInstanceOf(SchemaValidationError);
    expect((error as ProcessingError).message).toBe(
      "decode failed for message at offset 1 of stream 'source': value does not match the " +
        'schema: sensor: expected a string; value: expected a number; once it is known to be ' +
        "bad input, 'stream-windows skip --source source --target target --producer p " +
        "--offset 1' lets the next start dead-letter it",
    );
  });

  it('should dead-letter a failing value under dead-letter and aggregate the schema output', async () => {
    const broker = brokerWith([
      encodeMsgpack({ sensor: 'a', value: 2, extra: 'dropped by the schema' }),
      encodeMsgpack([1, 2]),
      encodeMsgpack({ sensor: 'b', value: 3 }),
    ]);
    await aggregate(broker.source('source'))
      .decode('msgpack', readingSchema)
      .onError('dead-letter')
      .count(3)
      .reduce(
        (all: Reading[], r) => [...all, r],
        () => [],
      )
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });

    const [result] = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(result?.outputs[0]?.value).toEqual([
      { sensor: 'a', value: 2 },
      { sensor: 'b', value: 3 },
    ]);
    expect(result?.deadLetters).toMatchObject([
      {
        offset: 1n,
        stage: 'decode',
        error:
          'value does not match the schema: sensor: expected a string; value: expected a number',
      },
    ]);
  });

  it('should stop at the first message whatever the policy when the validator is async', async () => {
    const asyncSchema: StandardSchemaV1<unknown, Reading> = {
      '~standard': {
        version: 1,
        vendor: 'async-test',
        validate: (value) => Promise.resolve({ value: value as Reading }),
      },
    };
    const broker = brokerWith([json({ sensor: 'a', value: 1 }), json({ sensor: 'a', value: 2 })]);
    const error = await aggregate(broker.source('source'))
      .decode('json', asyncSchema)
      .onError('dead-letter')
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stage: 'decode', offset: 0n });
    expect((error as ProcessingError).cause).toBeInstanceOf(ConfigError);
    expect(String(error)).toContain('decode schema must validate synchronously');
    expect(broker.messages('target')).toHaveLength(0);
  });

  it('should refuse, when the job is built, a schema without the version 1 interface', () => {
    const broker = brokerWith([]);
    const notASchema = { parse: (v: unknown) => v } as unknown as StandardSchemaV1;
    expect(() => aggregate(broker.source('source')).decode('json', notASchema)).toThrow(
      ConfigError,
    );
  });
});

describe('the value type through decode', () => {
  it('should keep the job type for a built-in format and take a schema output type', () => {
    const broker = brokerWith([]);
    const source = broker.source('source');
    expectTypeOf(aggregate<Reading>(source).decode('msgpack')).toEqualTypeOf<
      PipelineBuilder<Reading>
    >();
    expectTypeOf(aggregate<Reading>(source).decode<{ n: number }>('json')).toEqualTypeOf<
      PipelineBuilder<{ n: number }>
    >();
    expectTypeOf(aggregate(source).decode('json', readingSchema)).toEqualTypeOf<
      PipelineBuilder<Reading>
    >();
    expectTypeOf(aggregate(source).decode((body) => body.length)).toEqualTypeOf<
      PipelineBuilder<number>
    >();
    expectTypeOf(
      aggregate<Reading>(source)
        .map((r) => r.value)
        .filter((n): n is 1 => n === 1),
    ).toEqualTypeOf<PipelineBuilder<1>>();
  });
});
