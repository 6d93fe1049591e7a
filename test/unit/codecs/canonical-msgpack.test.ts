import { describe, expect, it } from 'vitest';
import { CodecError, decodeCanonical, encodeCanonical } from '../../../src/codecs/index.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('canonical msgpack', () => {
  it('should encode objects with the same entries in different orders to identical bytes', () => {
    const a = encodeCanonical({ b: 1, a: { y: [1, 2], x: 'z' }, c: null });
    const b = encodeCanonical({ c: null, a: { x: 'z', y: [1, 2] }, b: 1 });
    expect(a).toEqual(b);
    expect(hex(encodeCanonical({ b: 2, a: 1 }))).toBe('82a16101a16202');
  });

  it('should write -0 as 0, since the two are equal', () => {
    expect(encodeCanonical(-0)).toEqual(encodeCanonical(0));
  });

  it('should leave out properties whose value is undefined', () => {
    expect(encodeCanonical({ a: 1, b: undefined })).toEqual(encodeCanonical({ a: 1 }));
  });

  it('should keep numbers and bigints apart across a round trip', () => {
    const value = {
      int: 5,
      big: 5n,
      neg: -(2n ** 63n),
      max: 2n ** 64n - 1n,
      wide: 2 ** 40,
      f: 0.5,
    };
    expect(decodeCanonical(encodeCanonical(value))).toEqual(value);
  });

  it('should round-trip strings, binaries, arrays, dates and nested objects', () => {
    const value = {
      s: 'héllo',
      bin: new Uint8Array([1, 2, 3]),
      list: [true, false, null, 'x'],
      when: new Date(1_700_000_000_000),
      nested: { deeper: { deepest: [{ k: 1 }] } },
    };
    expect(decodeCanonical(encodeCanonical(value))).toEqual(value);
  });

  it('should refuse values msgpack cannot hold exactly', () => {
    expect(() => encodeCanonical(2n ** 64n)).toThrow(CodecError);
    expect(() => encodeCanonical({ m: new Map([['a', 1]]) })).toThrow(/use an object or array/);
    expect(() => encodeCanonical(new Set([1]))).toThrow(CodecError);
    expect(() => encodeCanonical({ f: () => 1 })).toThrow(CodecError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => encodeCanonical(cyclic)).toThrow(/nested deeper than 100/);
  });

  it('should reject truncated and trailing bytes with their position', () => {
    const bytes = encodeCanonical({ a: 'text' });
    expect(() => decodeCanonical(bytes.subarray(0, bytes.length - 1))).toThrow(CodecError);
    const extra = new Uint8Array([...bytes, 0xc0]);
    try {
      decodeCanonical(extra);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(CodecError);
      expect((error as CodecError).position).toBe(bytes.length);
    }
  });

  it('should reject an array header claiming more elements than bytes before allocating', () => {
    // array32 claiming 2^32-1 elements, then nested array16 headers claiming 65535 each
    expect(() => decodeCanonical(new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]))).toThrow(
      /claims 4294967295 values/,
    );
    const nested = new Uint8Array(3000);
    for (let i = 0; i < nested.length; i += 3) nested.set([0xdc, 0xff, 0xff], i);
    expect(() => decodeCanonical(nested)).toThrow(CodecError);
  });

  it('should wrap errors of the msgpack library into CodecError', () => {
    // fixmap with a __proto__ key, which the library refuses
    const proto = new Uint8Array([0x81, 0xa9, ...new TextEncoder().encode('__proto__'), 0x01]);
    expect(() => decodeCanonical(proto)).toThrow(CodecError);
    expect(() => decodeCanonical(new Uint8Array([0xc1]))).toThrow(/invalid msgpack type byte/);
  });
});

describe('canonical msgpack and prototype keys', () => {
  it('should refuse to encode an own __proto__ key, which the decoder would refuse to read', () => {
    const value = JSON.parse('{"__proto__": 1, "a": 2}') as unknown;
    expect(() => encodeCanonical(value)).toThrow("cannot encode an object key '__proto__'");
  });
});
