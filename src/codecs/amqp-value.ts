/**
 * The TypeScript representation of AMQP 1.0 values (OASIS AMQP 1.0, part 1 "Types", §1.6).
 *
 * Plain JavaScript values stand for the types they obviously mean; every other AMQP type is a
 * small tagged object `{ type, value }` (build them with the helpers in `amqp-constructors.ts`).
 * The decoder returns the plain form whenever encoding it again gives the same AMQP type, and
 * the tagged form otherwise, so `decode(encode(v))` deep-equals `v` for every value below.
 *
 * | AMQP type                         | TypeScript                                                |
 * | --------------------------------- | --------------------------------------------------------- |
 * | null                              | `null`                                                    |
 * | boolean                           | `boolean`                                                 |
 * | int                               | `number` that is an integer in int32 range (not -0)       |
 * | double                            | any other `number`; `{ type: 'double', value }` for an    |
 * |                                   | integral double that would otherwise encode as int        |
 * | long                              | `bigint` (also `{ type: 'long', value: bigint }`)         |
 * | string                            | `string`                                                  |
 * | binary                            | `Uint8Array` (decoded as a view into the input: no copy)  |
 * | list                              | `AmqpValue[]`                                             |
 * | map                               | `Map<AmqpValue, AmqpValue>` (entries in insertion order)  |
 * | ubyte ushort uint byte short      | `{ type, value: number }`                                 |
 * | float                             | `{ type: 'float', value: number }` (rounded to binary32)  |
 * | ulong                             | `{ type: 'ulong', value: bigint }`                        |
 * | timestamp                         | `{ type: 'timestamp', value: number }` (epoch ms)         |
 * | char                              | `{ type: 'char', value: string }` (one code point)        |
 * | uuid                              | `{ type: 'uuid', value: string }` (lower-case 8-4-4-4-12) |
 * | symbol                            | `{ type: 'symbol', value: string }` (ASCII)               |
 * | decimal32 / decimal64 / decimal128| `{ type, value: Uint8Array }` (raw 4/8/16 bytes)          |
 * | described type                    | `{ type: 'described', descriptor, value }`                |
 * | array                             | `{ type: 'array', elementType, descriptor?, values }`     |
 *
 * Plain objects are never AMQP maps (they would be ambiguous with the tagged forms); message
 * sections whose keys are always strings or symbols use records instead (see `amqp-message.ts`).
 */
export type AmqpValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | readonly AmqpValue[]
  | ReadonlyMap<AmqpValue, AmqpValue>
  | AmqpTyped;

export type AmqpTyped =
  AmqpTaggedNumber | AmqpTaggedBigint | AmqpTaggedString | AmqpDecimal | AmqpDescribed | AmqpArray;

export interface AmqpTaggedNumber {
  readonly type:
    'ubyte' | 'ushort' | 'uint' | 'byte' | 'short' | 'int' | 'float' | 'double' | 'timestamp';
  readonly value: number;
}

export interface AmqpTaggedBigint {
  readonly type: 'ulong' | 'long';
  readonly value: bigint;
}

export interface AmqpTaggedString {
  readonly type: 'symbol' | 'char' | 'uuid';
  readonly value: string;
}

export interface AmqpDecimal {
  readonly type: 'decimal32' | 'decimal64' | 'decimal128';
  readonly value: Uint8Array;
}

export interface AmqpDescribed {
  readonly type: 'described';
  readonly descriptor: AmqpValue;
  readonly value: AmqpValue;
}

/**
 * An AMQP array: every element has the same type (and descriptor, if any). `values` hold the
 * elements in their natural form for `elementType`, without tags: numbers for ubyte…double and
 * timestamp, bigints for ulong/long, strings for string/symbol/char/uuid, Uint8Array for
 * binary/decimals, arrays for list, Maps for map, `AmqpArray` objects for array.
 */
export interface AmqpArray {
  readonly type: 'array';
  readonly elementType: AmqpArrayElementType;
  readonly descriptor?: AmqpValue;
  readonly values: readonly AmqpValue[];
}

export type AmqpArrayElementType =
  | 'null'
  | 'boolean'
  | 'ubyte'
  | 'ushort'
  | 'uint'
  | 'ulong'
  | 'byte'
  | 'short'
  | 'int'
  | 'long'
  | 'float'
  | 'double'
  | 'decimal32'
  | 'decimal64'
  | 'decimal128'
  | 'char'
  | 'timestamp'
  | 'uuid'
  | 'binary'
  | 'string'
  | 'symbol'
  | 'list'
  | 'map'
  | 'array';

/** Deepest nesting of lists, maps, arrays and described values either codec accepts. */
export const MAX_DEPTH = 64;

/** Whether a value is an AMQP list (Array.isArray alone would narrow a readonly list to any[]). */
export function isList(value: unknown): value is readonly AmqpValue[] {
  return Array.isArray(value);
}

/** Whether a plain number encodes as an AMQP int (otherwise it encodes as a double). */
export function isInt32(value: number): boolean {
  return (value | 0) === value && !Object.is(value, -0);
}
