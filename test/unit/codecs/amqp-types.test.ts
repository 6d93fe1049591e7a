import { describe, expect, it } from 'vitest';
import {
  CodecError,
  amqp,
  decodeAmqpValue,
  encodeAmqpValue,
  type AmqpValue,
} from '../../../src/codecs/index.js';

const bytes = (...values: (number | string)[]): Uint8Array =>
  new Uint8Array(
    values.flatMap((v) => (typeof v === 'string' ? [...new TextEncoder().encode(v)] : [v])),
  );
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function roundTrip(value: AmqpValue): AmqpValue {
  return decodeAmqpValue(encodeAmqpValue(value));
}

function decodeError(input: Uint8Array): CodecError {
  try {
    decodeAmqpValue(input);
  } catch (error) {
    expect(error).toBeInstanceOf(CodecError);
    return error as CodecError;
  }
  throw new Error('expected a CodecError');
}

// Vectors from OASIS AMQP 1.0 part 1 "Types": §1.2 (figures 1.1 and 1.2) and the encodings
// of §1.6 (null 0x40, true 0x41, false 0x42, uint0 0x43, ulong0 0x44, list0 0x45, …).
describe('AMQP 1.0 type encodings from the specification', () => {
  it('should encode the str8-utf8 example of figure 1.1 byte for byte', () => {
    const encoded = bytes(0xa1, 0x1e, 'Hello Glorious Messaging World');
    expect(encodeAmqpValue('Hello Glorious Messaging World')).toEqual(encoded);
    expect(decodeAmqpValue(encoded)).toBe('Hello Glorious Messaging World');
  });

  it('should decode the described URL example of figure 1.2', () => {
    const encoded = bytes(0x00, 0xa1, 0x03, 'URL', 0xa1, 0x1e, 'http://example.org/hello-world');
    const value = amqp.described('URL', 'http://example.org/hello-world');
    expect(decodeAmqpValue(encoded)).toEqual(value);
    expect(encodeAmqpValue(value)).toEqual(encoded);
  });

  it('should use the zero-width encodings for null, booleans, uint0, ulong0 and list0', () => {
    expect(hex(encodeAmqpValue(null))).toBe('40');
    expect(hex(encodeAmqpValue(true))).toBe('41');
    expect(hex(encodeAmqpValue(false))).toBe('42');
    expect(hex(encodeAmqpValue(amqp.uint(0)))).toBe('43');
    expect(hex(encodeAmqpValue(amqp.ulong(0n)))).toBe('44');
    expect(hex(encodeAmqpValue([]))).toBe('45');
  });

  it('should decode the one-octet boolean form 0x56', () => {
    expect(decodeAmqpValue(bytes(0x56, 0x01))).toBe(true);
    expect(decodeAmqpValue(bytes(0x56, 0x00))).toBe(false);
    expect(decodeError(bytes(0x56, 0x02)).position).toBe(1);
  });

  it('should pick the smallest form for uint, ulong, int and long', () => {
    expect(hex(encodeAmqpValue(amqp.uint(7)))).toBe('5207');
    expect(hex(encodeAmqpValue(amqp.uint(256)))).toBe('7000000100');
    expect(hex(encodeAmqpValue(amqp.ulong(255n)))).toBe('53ff');
    expect(hex(encodeAmqpValue(amqp.ulong(256n)))).toBe('800000000000000100');
    expect(hex(encodeAmqpValue(-128))).toBe('5480');
    expect(hex(encodeAmqpValue(128))).toBe('7100000080');
    expect(hex(encodeAmqpValue(-1n))).toBe('55ff');
    expect(hex(encodeAmqpValue(1000n))).toBe('8100000000000003e8');
  });

  it('should decode every encoding of the same integer to the same value', () => {
    expect(decodeAmqpValue(bytes(0x43))).toEqual(amqp.uint(0));
    expect(decodeAmqpValue(bytes(0x52, 0x00))).toEqual(amqp.uint(0));
    expect(decodeAmqpValue(bytes(0x70, 0, 0, 0, 0))).toEqual(amqp.uint(0));
    expect(decodeAmqpValue(bytes(0x44))).toEqual(amqp.ulong(0n));
    expect(decodeAmqpValue(bytes(0x53, 0x00))).toEqual(amqp.ulong(0n));
    expect(decodeAmqpValue(bytes(0x80, 0, 0, 0, 0, 0, 0, 0, 0))).toEqual(amqp.ulong(0n));
    expect(decodeAmqpValue(bytes(0x54, 0xfe))).toBe(-2);
    expect(decodeAmqpValue(bytes(0x71, 0xff, 0xff, 0xff, 0xfe))).toBe(-2);
    expect(decodeAmqpValue(bytes(0x55, 0xfe))).toBe(-2n);
    expect(decodeAmqpValue(bytes(0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe))).toBe(-2n);
  });

  it('should lay out a list8 as size, count, then the elements', () => {
    // size counts the count octet and the elements: 1 + 2 + 1 = 4
    expect(hex(encodeAmqpValue([1, null]))).toBe('c00402540140');
  });

  it('should lay out a map8 as size, item count (keys plus values), then the items', () => {
    expect(hex(encodeAmqpValue(new Map([['a', 1]])))).toBe('c1060' + '2a101615401');
  });

  it('should lay out an array8 as size, count, one element constructor, then bare elements', () => {
    expect(hex(encodeAmqpValue(amqp.array('int', [1, 2])))).toBe('e0040254' + '0102');
    expect(hex(encodeAmqpValue(amqp.array('symbol', ['a', 'bc'])))).toBe('e00702a3' + '0161026263');
  });
});

describe('AMQP 1.0 value round trips', () => {
  const cases: [string, AmqpValue][] = [
    ['null', null],
    ['true', true],
    ['false', false],
    ['ubyte', amqp.ubyte(255)],
    ['ushort', amqp.ushort(65535)],
    ['small uint', amqp.uint(200)],
    ['large uint', amqp.uint(0xffff_ffff)],
    ['small ulong', amqp.ulong(9n)],
    ['large ulong', amqp.ulong(0xffff_ffff_ffff_ffffn)],
    ['byte', amqp.byte(-128)],
    ['short', amqp.short(-32768)],
    ['small int', 127],
    ['large int', -2_147_483_648],
    ['small long', -128n],
    ['large long', -(2n ** 63n)],
    ['float', amqp.float(1.5)],
    ['double', 0.1],
    ['integral double', amqp.double(3)],
    ['negative zero double', -0],
    ['large double', 2 ** 40],
    ['NaN', NaN],
    ['decimal32', amqp.decimal32(bytes(1, 2, 3, 4))],
    ['decimal64', amqp.decimal64(bytes(1, 2, 3, 4, 5, 6, 7, 8))],
    ['decimal128', amqp.decimal128(new Uint8Array(16).fill(9))],
    ['char', amqp.char('😀')],
    ['timestamp', amqp.timestamp(1_311_704_463_521)],
    ['negative timestamp', amqp.timestamp(-1)],
    ['uuid', amqp.uuid('f81d4fae-7dec-11d0-a765-00a0c91e6bf6')],
    ['vbin8', bytes(1, 2, 3)],
    ['vbin32', new Uint8Array(300).fill(7)],
    ['str8', 'héllo'],
    ['str32', 'x'.repeat(300)],
    ['sym8', amqp.symbol('amqp:accepted:list')],
    ['sym32', amqp.symbol('s'.repeat(256))],
    ['list0', []],
    ['list8', [1, 'a', null, [true]]],
    ['list32', Array.from({ length: 300 }, (_, i) => i)],
    ['map8', new Map<AmqpValue, AmqpValue>([[amqp.symbol('k'), 'v']])],
    ['map32', new Map<AmqpValue, AmqpValue>(Array.from({ length: 200 }, (_, i) => [`k${i}`, i]))],
    ['described list', amqp.described(amqp.ulong(0x70n), [true])],
    ['nested described', amqp.described('a', amqp.described(amqp.symbol('b'), 1))],
    ['array8 of uint', amqp.array('uint', [0, 1, 255])],
    ['array32 of uint', amqp.array('uint', [0, 256, 0xffff_ffff])],
    ['array of ulong', amqp.array('ulong', [0n, 2n ** 64n - 1n])],
    ['array of long', amqp.array('long', [-1n, 5n])],
    ['array of int', amqp.array('int', [-129, 5])],
    ['array of null', amqp.array('null', [null, null])],
    ['array of boolean', amqp.array('boolean', [true, false])],
    ['array of ubyte', amqp.array('ubyte', [0, 255])],
    ['array of ushort', amqp.array('ushort', [65535])],
    ['array of byte', amqp.array('byte', [-1])],
    ['array of short', amqp.array('short', [-2])],
    ['array of float', amqp.array('float', [0.5])],
    ['array of double', amqp.array('double', [2, 0.25])],
    ['array of decimal32', amqp.array('decimal32', [bytes(0, 0, 0, 1)])],
    ['array of char', amqp.array('char', ['a', 'é'])],
    ['array of timestamp', amqp.array('timestamp', [0, 1_700_000_000_000])],
    ['array of uuid', amqp.array('uuid', ['00000000-0000-0000-0000-000000000001'])],
    ['array of binary', amqp.array('binary', [bytes(1), new Uint8Array(256)])],
    ['array of string', amqp.array('string', ['a', 'é'.repeat(200)])],
    ['array of symbol', amqp.array('symbol', ['x', 'y'.repeat(300)])],
    ['array of list', amqp.array('list', [[1], []])],
    ['array of map', amqp.array('map', [new Map([['a', 1]])])],
    ['array of array', amqp.array('array', [amqp.array('int', [1]), amqp.array('string', [])])],
    ['described array', amqp.array('list', [[1]], amqp.symbol('example:book:list'))],
    [
      'empty array32',
      amqp.array(
        'string',
        Array.from({ length: 300 }, () => ''),
      ),
    ],
  ];

  for (const [name, value] of cases) {
    it(`should round-trip a ${name}`, () => {
      expect(roundTrip(value)).toEqual(value);
    });
  }

  it('should use str32 for a 300-byte string and list32 for a 300-element list', () => {
    expect(encodeAmqpValue('x'.repeat(300))[0]).toBe(0xb1);
    expect(encodeAmqpValue('x'.repeat(255))[0]).toBe(0xa1);
    expect(encodeAmqpValue(Array.from({ length: 300 }, () => null))[0]).toBe(0xd0);
    expect(encodeAmqpValue(Array.from({ length: 200 }, () => 'abc'))[0]).toBe(0xd0);
    expect(encodeAmqpValue(new Uint8Array(300))[0]).toBe(0xb0);
  });

  it('should decode a str32 string', () => {
    expect(decodeAmqpValue(bytes(0xb1, 0, 0, 0, 2, 'hi'))).toBe('hi');
  });

  it('should decode integral doubles to a tagged double so they stay doubles', () => {
    expect(decodeAmqpValue(encodeAmqpValue(amqp.double(2)))).toEqual(amqp.double(2));
    expect(decodeAmqpValue(encodeAmqpValue(2.5))).toBe(2.5);
    expect(encodeAmqpValue(2)[0]).toBe(0x54);
  });

  it('should return binary values as views of the input', () => {
    const input = bytes(0xa0, 0x02, 9, 8);
    const value = decodeAmqpValue(input) as Uint8Array;
    expect(value.buffer).toBe(input.buffer);
    expect(value.byteOffset).toBe(2);
  });
});

describe('AMQP 1.0 encoder validation', () => {
  const invalid: [string, AmqpValue][] = [
    ['a ubyte out of range', amqp.ubyte(256)],
    ['a negative uint', amqp.uint(-1)],
    ['a fractional ushort', amqp.ushort(1.5)],
    ['a ulong above 2^64', amqp.ulong(2n ** 64n)],
    ['a long below -2^63', -(2n ** 63n) - 1n],
    ['a non-ASCII symbol', amqp.symbol('é')],
    ['a char of two code points', amqp.char('ab')],
    ['a malformed uuid', amqp.uuid('not-a-uuid')],
    ['a decimal64 of 4 bytes', amqp.decimal64(bytes(1, 2, 3, 4))],
    ['a fractional timestamp', amqp.timestamp(1.5)],
    ['an array element of the wrong type', amqp.array('int', ['x'])],
    ['a plain object', { a: 1 } as unknown as AmqpValue],
    ['undefined', undefined as unknown as AmqpValue],
  ];
  for (const [name, value] of invalid) {
    it(`should refuse ${name} with a CodecError`, () => {
      expect(() => encodeAmqpValue(value)).toThrow(CodecError);
    });
  }

  it('should refuse values nested deeper than 64 levels instead of overflowing the stack', () => {
    let value: AmqpValue = 1;
    for (let i = 0; i < 65; i++) value = [value];
    expect(() => encodeAmqpValue(value)).toThrow(/nested deeper than 64/);
    const cyclic: AmqpValue[] = [];
    cyclic.push(cyclic);
    expect(() => encodeAmqpValue(cyclic)).toThrow(CodecError);
  });
});

describe('AMQP 1.0 decoder robustness', () => {
  it('should reject a list32 claiming 2^32-1 elements before allocating', () => {
    const error = decodeError(
      bytes(0xd0, 0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 0x40, 0x40, 0x40, 0x40),
    );
    expect(error.message).toMatch(/claims 4294967295 elements/);
    expect(error.position).toBe(1);
  });

  it('should reject a compound whose size runs past the end', () => {
    expect(decodeError(bytes(0xc0, 0x10, 0x01, 0x40)).position).toBe(1);
  });

  it('should reject a list whose elements do not fill its declared size', () => {
    expect(decodeError(bytes(0xc0, 0x03, 0x01, 0x40, 0x40)).message).toMatch(/declared size/);
  });

  it('should reject an unknown format code with its position', () => {
    const error = decodeError(bytes(0xc0, 0x02, 0x01, 0x3f));
    expect(error.message).toMatch(/unknown AMQP format code 0x3f/);
    expect(error.position).toBe(3);
  });

  it('should reject truncated fixed-width values', () => {
    expect(decodeError(bytes(0x71, 0, 0)).position).toBe(1);
    expect(decodeError(bytes(0x98, 1, 2)).message).toMatch(/truncated/);
  });

  it('should reject invalid UTF-8 in a string and non-ASCII in a symbol', () => {
    expect(decodeError(bytes(0xa1, 0x01, 0xff)).message).toMatch(/UTF-8/);
    expect(decodeError(bytes(0xa3, 0x01, 0xe9)).position).toBe(2);
  });

  it('should reject nesting deeper than 64', () => {
    const input = new Uint8Array(200).fill(0x00);
    expect(decodeError(input).message).toMatch(/nesting deeper than 64/);
  });

  it('should reject a map with an odd item count or a duplicate key', () => {
    expect(decodeError(bytes(0xc1, 0x02, 0x01, 0x40)).message).toMatch(/odd/);
    expect(decodeError(bytes(0xc1, 0x05, 0x04, 0x41, 0x40, 0x41, 0x40)).message).toMatch(
      /duplicate/,
    );
  });

  it('should reject bytes left after the value', () => {
    expect(decodeError(bytes(0x40, 0x40)).position).toBe(1);
  });

  it('should reject a char beyond U+10FFFF', () => {
    expect(decodeError(bytes(0x73, 0x00, 0x11, 0x00, 0x00)).message).toMatch(/code point/);
  });
});
