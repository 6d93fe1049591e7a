import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CodecError,
  decodeCanonical,
  decodeSubEntryBatch,
  encodeCanonical,
  encodeSubEntryBatch,
} from '../../../src/codecs/index.js';

const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS ?? 300) };

function onlyCodecErrors(decode: () => unknown): void {
  try {
    decode();
  } catch (error) {
    if (!(error instanceof CodecError)) throw error;
  }
}

/** JSON-like values plus bigints, the kind of value an aggregate holds (-0 is written as 0). */
const number = fc.double().map((d) => (Object.is(d, -0) ? 0 : d));

const aggregate = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: fc.oneof(fc.integer(), number, fc.string(), fc.boolean()) },
    fc.constant(null),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), {
      maxKeys: 6,
      noNullPrototype: true,
    }),
  ),
})).value;

/** The same object with its keys inserted in reverse order, recursively. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).reverse()) {
    Object.defineProperty(out, key, {
      value: reversed((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

describe('canonical msgpack properties', () => {
  it('should encode equal values inserted in different orders to identical bytes', () => {
    fc.assert(
      fc.property(aggregate, (value) => {
        expect(encodeCanonical(reversed(value))).toEqual(encodeCanonical(value));
      }),
      RUNS,
    );
  });

  it('should round-trip aggregate values', () => {
    fc.assert(
      fc.property(aggregate, (value) => {
        expect(decodeCanonical(encodeCanonical(value))).toEqual(value);
      }),
      RUNS,
    );
  });

  it('should throw only CodecError on random and truncated bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), aggregate, fc.nat(), (bytes, value, cut) => {
        onlyCodecErrors(() => decodeCanonical(bytes));
        const encoded = encodeCanonical(value);
        onlyCodecErrors(() => decodeCanonical(encoded.subarray(0, cut % (encoded.length + 1))));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('sub-entry batch properties', () => {
  const messages = fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 20 });
  const compression = fc.constantFrom('none' as const, 'gzip' as const);

  it('should round-trip any batch, compressed or not', () => {
    fc.assert(
      fc.property(messages, compression, (batch, mode) => {
        expect(decodeSubEntryBatch(encodeSubEntryBatch(batch, mode))).toEqual({
          messages: batch,
          compression: mode,
        });
      }),
      RUNS,
    );
  });

  it('should throw only CodecError on random, truncated and corrupted batches', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 100 }),
        messages,
        compression,
        fc.nat(),
        fc.integer({ min: 0, max: 255 }),
        (random, batch, mode, at, byte) => {
          onlyCodecErrors(() => decodeSubEntryBatch(random));
          onlyCodecErrors(() => decodeSubEntryBatch(new Uint8Array([0x80, ...random])));
          const encoded = encodeSubEntryBatch(batch, mode);
          onlyCodecErrors(() => decodeSubEntryBatch(encoded, 0, at % (encoded.length + 1)));
          const corrupted = encoded.slice();
          corrupted[at % corrupted.length] = byte;
          onlyCodecErrors(() => decodeSubEntryBatch(corrupted));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
