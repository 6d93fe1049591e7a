/**
 * Helpers that build the tagged AMQP values of `amqp-value.ts`, e.g. `amqp.ulong(5n)`.
 * They only build objects; the encoder validates ranges when it writes them.
 */
import type {
  AmqpArray,
  AmqpArrayElementType,
  AmqpDecimal,
  AmqpDescribed,
  AmqpTaggedBigint,
  AmqpTaggedNumber,
  AmqpTaggedString,
  AmqpValue,
} from './amqp-value.js';

export const ubyte = (value: number): AmqpTaggedNumber => ({ type: 'ubyte', value });
export const ushort = (value: number): AmqpTaggedNumber => ({ type: 'ushort', value });
export const uint = (value: number): AmqpTaggedNumber => ({ type: 'uint', value });
export const byte = (value: number): AmqpTaggedNumber => ({ type: 'byte', value });
export const short = (value: number): AmqpTaggedNumber => ({ type: 'short', value });
export const int = (value: number): AmqpTaggedNumber => ({ type: 'int', value });
export const float = (value: number): AmqpTaggedNumber => ({ type: 'float', value });
export const double = (value: number): AmqpTaggedNumber => ({ type: 'double', value });

export const ulong = (value: bigint | number): AmqpTaggedBigint => ({
  type: 'ulong',
  value: BigInt(value),
});
export const long = (value: bigint | number): AmqpTaggedBigint => ({
  type: 'long',
  value: BigInt(value),
});

/** Milliseconds since the Unix epoch, or a Date. */
export const timestamp = (value: number | Date): AmqpTaggedNumber => ({
  type: 'timestamp',
  value: typeof value === 'number' ? value : value.getTime(),
});

export const symbol = (value: string): AmqpTaggedString => ({ type: 'symbol', value });
export const char = (value: string): AmqpTaggedString => ({ type: 'char', value });
/** A UUID in its 8-4-4-4-12 hex form; the decoder returns it lower-case. */
export const uuid = (value: string): AmqpTaggedString => ({ type: 'uuid', value });

export const decimal32 = (value: Uint8Array): AmqpDecimal => ({ type: 'decimal32', value });
export const decimal64 = (value: Uint8Array): AmqpDecimal => ({ type: 'decimal64', value });
export const decimal128 = (value: Uint8Array): AmqpDecimal => ({ type: 'decimal128', value });

export const described = (descriptor: AmqpValue, value: AmqpValue): AmqpDescribed => ({
  type: 'described',
  descriptor,
  value,
});

export function array(
  elementType: AmqpArrayElementType,
  values: readonly AmqpValue[],
  descriptor?: AmqpValue,
): AmqpArray {
  return descriptor === undefined
    ? { type: 'array', elementType, values }
    : { type: 'array', elementType, descriptor, values };
}
