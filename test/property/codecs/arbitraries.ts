import fc from 'fast-check';
import {
  amqp,
  type AmqpArray,
  type AmqpArrayElementType,
  type AmqpMessage,
  type AmqpMessageId,
  type AmqpValue,
} from '../../../src/codecs/index.js';

/** Strings of valid code points, sometimes longer than 255 UTF-8 bytes (str32). */
export const text = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 90, maxLength: 300 }) },
);

const ascii = (maxLength: number): fc.Arbitrary<string> =>
  fc
    .array(fc.integer({ min: 0, max: 127 }), { maxLength })
    .map((codes) => String.fromCharCode(...codes));

const symbolText = fc.oneof({ weight: 4, arbitrary: ascii(20) }, ascii(300));
const binary = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 20 }) },
  fc.uint8Array({ minLength: 250, maxLength: 300 }),
);
const timestampMs = fc.integer({ min: -8.64e15, max: 8.64e15 });
const uint32 = fc.integer({ min: 0, max: 0xffff_ffff });
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const uint64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
const codePoint = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 });

/** Scalars in the representation the decoder returns (so round trips compare with toEqual). */
export const scalar: fc.Arbitrary<AmqpValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  int64,
  text,
  binary,
  fc.integer({ min: 0, max: 255 }).map(amqp.ubyte),
  fc.integer({ min: 0, max: 0xffff }).map(amqp.ushort),
  uint32.map(amqp.uint),
  uint64.map(amqp.ulong),
  fc.integer({ min: -128, max: 127 }).map(amqp.byte),
  fc.integer({ min: -32768, max: 32767 }).map(amqp.short),
  fc.float().map(amqp.float),
  fc.integer().map(amqp.double),
  timestampMs.map(amqp.timestamp),
  codePoint.map(amqp.char),
  fc.uuid().map(amqp.uuid),
  symbolText.map(amqp.symbol),
  fc.uint8Array({ minLength: 4, maxLength: 4 }).map(amqp.decimal32),
  fc.uint8Array({ minLength: 8, maxLength: 8 }).map(amqp.decimal64),
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map(amqp.decimal128),
);

/** Element values for an array of each scalar element type, in their untagged form. */
const elements: Partial<Record<AmqpArrayElementType, fc.Arbitrary<AmqpValue>>> = {
  null: fc.constant(null),
  boolean: fc.boolean(),
  ubyte: fc.integer({ min: 0, max: 255 }),
  uint: uint32,
  ulong: uint64,
  int: fc.integer(),
  long: int64,
  double: fc.double(),
  float: fc.float(),
  timestamp: timestampMs,
  char: codePoint,
  uuid: fc.uuid(),
  binary,
  string: text,
  symbol: symbolText,
};

const scalarArray: fc.Arbitrary<AmqpArray> = fc
  .constantFrom(...(Object.keys(elements) as AmqpArrayElementType[]))
  .chain((type) =>
    fc
      .array(elements[type] as fc.Arbitrary<AmqpValue>, { maxLength: 8 })
      .map((values) => amqp.array(type, values)),
  );

export const value: fc.Arbitrary<AmqpValue> = fc.letrec<{ value: AmqpValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 6, arbitrary: scalar },
    fc.array(tie('value'), { maxLength: 6 }),
    fc
      .array(fc.tuple(tie('value'), tie('value')), { maxLength: 5 })
      .map((entries) => new Map(entries)),
    fc.tuple(tie('value'), tie('value')).map(([d, v]) => amqp.described(d, v)),
    scalarArray,
    fc
      .array(fc.array(tie('value'), { maxLength: 3 }), { maxLength: 3 })
      .map((lists) => amqp.array('list', lists)),
  ),
})).value;

const simple = scalar;
const record = <T>(values: fc.Arbitrary<T>): fc.Arbitrary<Record<string, T>> =>
  fc.dictionary(ascii(12), values, { maxKeys: 5, noNullPrototype: true });

const messageId: fc.Arbitrary<AmqpMessageId> = fc.oneof(
  text,
  fc.uint8Array({ maxLength: 16 }),
  uint64.map(amqp.ulong),
  fc.uuid().map(amqp.uuid),
);

export const message: fc.Arbitrary<AmqpMessage> = fc.record(
  {
    header: fc.record(
      {
        durable: fc.boolean(),
        priority: fc.integer({ min: 0, max: 255 }),
        ttl: uint32,
        firstAcquirer: fc.boolean(),
        deliveryCount: uint32,
      },
      { requiredKeys: [] },
    ),
    deliveryAnnotations: record(value),
    messageAnnotations: record(value),
    properties: fc.record(
      {
        messageId,
        userId: fc.uint8Array({ maxLength: 12 }),
        to: text,
        subject: text,
        replyTo: text,
        correlationId: messageId,
        contentType: ascii(30),
        contentEncoding: ascii(10),
        absoluteExpiryTime: timestampMs,
        creationTime: timestampMs,
        groupId: text,
        groupSequence: uint32,
        replyToGroupId: text,
      },
      { requiredKeys: [] },
    ),
    applicationProperties: record(simple),
    body: fc.oneof(
      fc
        .array(binary, { minLength: 1, maxLength: 4 })
        .map((sections) => ({ type: 'data' as const, sections })),
      fc
        .array(fc.array(value, { maxLength: 4 }), { minLength: 1, maxLength: 3 })
        .map((sections) => ({ type: 'sequence' as const, sections })),
      value.map((v) => ({ type: 'value' as const, value: v })),
    ),
    footer: record(value),
  },
  { requiredKeys: [] },
);
