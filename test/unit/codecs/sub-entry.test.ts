import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  CodecError,
  decodeSubEntryBatch,
  encodeMessage,
  encodeSubEntryBatch,
  subEntrySize,
} from '../../../src/codecs/index.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('sub-entry batches', () => {
  it('should lay out an uncompressed batch as osiris defines a sub-batch entry', () => {
    // 1 bit entry type = 1, 3 bits compression = 0, 4 reserved; uint16 records;
    // uint32 uncompressed size; uint32 size; then uint32 size + bytes per message.
    expect(hex(encodeSubEntryBatch([text('ab'), text('c')]))).toBe(
      '80' + '0002' + '0000000b' + '0000000b' + '00000002' + '6162' + '00000001' + '63',
    );
  });

  it('should round-trip messages as views of the input when uncompressed', () => {
    const messages = [encodeMessage({ body: { type: 'value', value: 'x' } }), text(''), text('z')];
    const encoded = encodeSubEntryBatch(messages);
    const decoded = decodeSubEntryBatch(encoded);
    expect(decoded).toEqual({ messages, compression: 'none' });
    expect(decoded.messages[0]?.buffer).toBe(encoded.buffer);
  });

  it('should round-trip a gzip batch and mark compression 1 in the type byte', () => {
    const messages = Array.from({ length: 50 }, (_, i) => text(`message number ${i}`));
    const encoded = encodeSubEntryBatch(messages, 'gzip');
    expect(encoded[0]).toBe(0x90);
    expect(encoded.length).toBeLessThan(messages.length * 20);
    expect(decodeSubEntryBatch(encoded)).toEqual({ messages, compression: 'gzip' });
  });

  it('should round-trip an empty batch', () => {
    expect(decodeSubEntryBatch(encodeSubEntryBatch([]))).toEqual({
      messages: [],
      compression: 'none',
    });
    expect(decodeSubEntryBatch(encodeSubEntryBatch([], 'gzip')).messages).toEqual([]);
  });

  it('should decode a sub-entry inside a larger buffer and report its size', () => {
    const entry = encodeSubEntryBatch([text('abc')]);
    const buffer = new Uint8Array(entry.length + 8);
    buffer.set(entry, 8);
    expect(subEntrySize(buffer, 8)).toBe(entry.length);
    expect(decodeSubEntryBatch(buffer, 8, buffer.length).messages).toEqual([text('abc')]);
  });

  it('should refuse more than 65535 messages', () => {
    expect(() => encodeSubEntryBatch(new Array<Uint8Array>(65536).fill(text('')))).toThrow(
      CodecError,
    );
  });

  const corrupt: [string, number[], RegExp][] = [
    ['a simple entry (bit 7 clear)', [0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], /bit 7 clear/],
    ['a truncated header', [0x80, 0, 1], /truncated sub-entry header/],
    ['an unsupported compression', [0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], /compression 2/],
    ['data running past the end', [0x80, 0, 1, 0, 0, 0, 9, 0, 0, 0, 9, 0], /runs past/],
    [
      'a record count larger than the data allows',
      [0x80, 0xff, 0xff, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 0],
      /claims 65535 records/,
    ],
    [
      'a record running past the batch',
      [0x80, 0, 1, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0, 0, 9, 1],
      /runs past the batch/,
    ],
    [
      'an uncompressed size that does not match',
      [0x80, 0, 1, 0, 0, 0, 6, 0, 0, 0, 5, 0, 0, 0, 1, 1],
      /header says 6/,
    ],
    [
      'bytes after the records',
      [0x80, 0, 1, 0, 0, 0, 6, 0, 0, 0, 6, 0, 0, 0, 1, 1, 9],
      /left after 1 records/,
    ],
    ['invalid gzip data', [0x90, 0, 1, 0, 0, 0, 5, 0, 0, 0, 2, 1, 2], /gzip data is invalid/],
  ];
  for (const [name, bytes, pattern] of corrupt) {
    it(`should reject ${name} with a CodecError`, () => {
      expect(() => decodeSubEntryBatch(new Uint8Array(bytes))).toThrow(CodecError);
      expect(() => decodeSubEntryBatch(new Uint8Array(bytes))).toThrow(pattern);
    });
  }

  it('should stop inflating a gzip batch that is larger than its header claims', () => {
    const bomb = gzipSync(new Uint8Array(1_000_000));
    const entry = new Uint8Array(11 + bomb.length);
    const view = new DataView(entry.buffer);
    view.setUint8(0, 0x90);
    view.setUint16(1, 1);
    view.setUint32(3, 100);
    view.setUint32(7, bomb.length);
    entry.set(bomb, 11);
    expect(() => decodeSubEntryBatch(entry)).toThrow(CodecError);
  });

  it('should refuse a gzip batch claiming more than the uncompressed limit', () => {
    const entry = encodeSubEntryBatch([new Uint8Array(1000)], 'gzip');
    expect(() => decodeSubEntryBatch(entry, 0, entry.length, 100)).toThrow(/over the limit/);
  });
});
