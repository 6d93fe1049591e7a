import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BodyKind,
  CodecError,
  createMessageScan,
  dataSections,
  decodeAmqpValue,
  decodeMessage,
  encodeAmqpValue,
  encodeMessage,
  scanMessage,
  type AmqpMessage,
} from '../../../src/codecs/index.js';
import { decodeApplicationProperties } from '../../../src/codecs/amqp-message.js';
import { ApplicationPropertyScan } from '../../../src/codecs/application-property-scan.js';
import { message, value } from './arbitraries.js';

const RUNS = { numRuns: Number(process.env.PROPERTY_RUNS ?? 300) };

/** Runs `decode`; it may return, but the only error it may throw is a CodecError. */
function onlyCodecErrors(decode: () => unknown): void {
  try {
    decode();
  } catch (error) {
    if (!(error instanceof CodecError)) throw error;
    expect(error.position).toBeGreaterThanOrEqual(0);
  }
}

/** What `decodeApplicationProperties` gives for each of `names`: undefined where absent. */
function propertiesOf(bytes: Uint8Array, names: readonly string[]): unknown[] {
  const properties = decodeApplicationProperties(bytes);
  return names.map((name) =>
    properties !== undefined && Object.hasOwn(properties, name) ? properties[name] : undefined,
  );
}

/** A valid encoded message with some bytes overwritten at random positions. */
const mutatedMessage = fc
  .tuple(
    message.map(encodeMessage),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
  )
  .map(([bytes, edits]) => {
    const copy = bytes.slice();
    for (const [at, byte] of edits) if (copy.length > 0) copy[at % copy.length] = byte;
    return copy;
  });

describe('AMQP 1.0 codec properties', () => {
  it('should round-trip generated AMQP values', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(decodeAmqpValue(encodeAmqpValue(v))).toEqual(v);
      }),
      RUNS,
    );
  });

  it('should round-trip generated messages', () => {
    fc.assert(
      fc.property(message, (m) => {
        expect(decodeMessage(encodeMessage(m))).toEqual(m);
      }),
      RUNS,
    );
  });

  it('should encode equal messages to equal bytes', () => {
    fc.assert(
      fc.property(message, (m) => {
        const copy = decodeMessage(encodeMessage(m));
        expect(encodeMessage(copy)).toEqual(encodeMessage(m));
      }),
      RUNS,
    );
  });

  it('should make scanMessage agree with decodeMessage on body and creation time', () => {
    const scan = createMessageScan();
    fc.assert(
      fc.property(message, fc.nat(8), (m, offset) => {
        const encoded = encodeMessage(m);
        const buffer = new Uint8Array(offset + encoded.length + 3);
        buffer.set(encoded, offset);
        scanMessage(buffer, offset, offset + encoded.length, scan);
        const decoded = decodeMessage(encoded);
        expect(scan.creationTime).toEqual(decoded.properties?.creationTime ?? NaN);
        const body = decoded.body;
        const bytes = buffer.subarray(scan.bodyStart, scan.bodyEnd);
        if (body?.type === 'data') {
          expect(scan.bodyKind).toBe(BodyKind.Data);
          expect(scan.dataSections).toBe(body.sections.length);
          expect(bytes).toEqual(body.sections[0]);
          expect(dataSections(encoded)).toEqual(body.sections);
        } else {
          expect(scan.dataSections).toBe(0);
        }
        if (body === undefined) {
          expect(scan.bodyKind).toBe(BodyKind.None);
          expect(scan.bodyStart).toBe(offset);
        } else if (body.type === 'sequence') {
          expect(decodeAmqpValue(bytes)).toEqual(body.sections[0]);
        } else if (body.type === 'value') {
          if (typeof body.value === 'string') {
            expect(new TextDecoder().decode(bytes)).toBe(body.value);
          } else if (body.value instanceof Uint8Array) {
            expect(bytes).toEqual(body.value);
          } else {
            expect(decodeAmqpValue(bytes)).toEqual(body.value);
          }
        }
      }),
      RUNS,
    );
  });

  it('should make ApplicationPropertyScan give the values decodeApplicationProperties gives', () => {
    let found = 0;
    fc.assert(
      fc.property(
        message,
        fc.nat(8),
        fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 }),
        (m, offset, others) => {
          const encoded = encodeMessage(m);
          const buffer = new Uint8Array(offset + encoded.length + 3);
          buffer.set(encoded, offset);
          // Some of its properties, and names it may not have.
          const keys = Object.keys(m.applicationProperties ?? {}).filter((_, i) => i % 2 === 0);
          const names = [...new Set([...keys, ...others])];
          const read = new ApplicationPropertyScan(names).read(
            buffer,
            offset,
            offset + encoded.length,
          );
          expect(read).toEqual(propertiesOf(encoded, names));
          if (read.some((v) => v !== undefined)) found++;
        },
      ),
      RUNS,
    );
    expect(found).toBeGreaterThan(RUNS.numRuns / 5);
  });

  it('should throw only CodecError when decoding random bytes', () => {
    const scan = createMessageScan();
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        onlyCodecErrors(() => decodeAmqpValue(bytes));
        onlyCodecErrors(() => decodeMessage(bytes));
        onlyCodecErrors(() => {
          scanMessage(bytes, 0, bytes.length, scan);
        });
        onlyCodecErrors(() => dataSections(bytes));
        onlyCodecErrors(() => new ApplicationPropertyScan(['a', '']).read(bytes));
      }),
      { numRuns: 2000 },
    );
  });

  it('should throw only CodecError on random bytes after a section descriptor', () => {
    const scan = createMessageScan();
    const section = fc.integer({ min: 0x70, max: 0x78 });
    fc.assert(
      fc.property(section, fc.uint8Array({ maxLength: 120 }), (code, tail) => {
        const bytes = new Uint8Array([0x00, 0x53, code, ...tail]);
        onlyCodecErrors(() => decodeMessage(bytes));
        onlyCodecErrors(() => new ApplicationPropertyScan(['a']).read(bytes));
        onlyCodecErrors(() => {
          scanMessage(bytes, 0, bytes.length, scan);
        });
      }),
      { numRuns: 2000 },
    );
  });

  it('should throw only CodecError on truncated valid messages', () => {
    const scan = createMessageScan();
    fc.assert(
      fc.property(message, fc.double({ min: 0, max: 1, noNaN: true }), (m, fraction) => {
        const bytes = encodeMessage(m);
        const cut = Math.floor(bytes.length * fraction);
        onlyCodecErrors(() => decodeMessage(bytes, 0, cut));
        onlyCodecErrors(() => {
          scanMessage(bytes, 0, cut, scan);
        });
      }),
      RUNS,
    );
  });

  it('should scan every message that decodes, even after random corruption (and read its properties)', () => {
    const scan = createMessageScan();
    fc.assert(
      fc.property(mutatedMessage, (bytes) => {
        let decoded: AmqpMessage;
        try {
          decoded = decodeMessage(bytes);
        } catch (error) {
          expect(error).toBeInstanceOf(CodecError);
          onlyCodecErrors(() => {
            scanMessage(bytes, 0, bytes.length, scan);
          });
          return;
        }
        scanMessage(bytes, 0, bytes.length, scan);
        expect(scan.creationTime).toEqual(decoded.properties?.creationTime ?? NaN);
        const sections = decoded.body?.type === 'data' ? decoded.body.sections : [];
        expect(scan.dataSections).toBe(sections.length);
        const names = Object.keys(decoded.applicationProperties ?? {});
        expect(new ApplicationPropertyScan(names).read(bytes)).toEqual(propertiesOf(bytes, names));
      }),
      RUNS,
    );
  });
});
