// The Deliver frame parser on its own: malformed chunks are refused with the stream and
// offset named, before anything of them is delivered.
import { describe, expect, it } from 'vitest';
import { MalformedChunkError, parseDeliver } from '../../../../src/rabbitmq/read/deliver-chunk.js';
import { sourceMessage } from '../../../../src/index.js';
import { encodeSubEntryBatch } from '../../../../src/codecs/sub-entry.js';
import { messagesOf, offsetsOf } from '../../../support/brokers/rabbitmq.js';

const amqpMessage = (text: string): Buffer => Buffer.from(sourceMessage(text));

function uint32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value);
  return b;
}

/** A Deliver v1 frame (without its size prefix) of simple entries. */
function deliverFrame(firstOffset: bigint, messages: Buffer[], records = messages.length): Buffer {
  const entries = messages.map((m) => Buffer.concat([uint32(m.length), m]));
  return deliverFrameOf(firstOffset, entries, records);
}

/** A Deliver v1 frame of already encoded entries holding `records` records in all. */
function deliverFrameOf(firstOffset: bigint, entries: Buffer[], records: number): Buffer {
  const data = Buffer.concat(entries);
  const header = Buffer.alloc(5 + 48);
  header.writeUInt16BE(8, 0);
  header.writeUInt16BE(1, 2);
  header.writeUInt8(0, 4);
  header.writeUInt8(0x50, 5);
  header.writeUInt16BE(entries.length, 7);
  header.writeUInt32BE(records, 9);
  header.writeBigInt64BE(BigInt(Date.now()), 13);
  header.writeBigUInt64BE(firstOffset, 29);
  header.writeUInt32BE(data.length, 41);
  return Buffer.concat([header, data]);
}

describe('parseDeliver', () => {
  it('names the stream and chunk offset when a chunk is cut short', () => {
    const frame = deliverFrame(42n, [amqpMessage('a'), amqpMessage('b')]);
    const truncated = frame.subarray(0, frame.length - 3);
    expect(() => parseDeliver(truncated, 'orders', 0n)).toThrow(MalformedChunkError);
    expect(() => parseDeliver(truncated, 'orders', 0n)).toThrow(
      /stream 'orders' at offset 42 .*runs past/,
    );
  });

  it('rejects a chunk that holds fewer records than its header declares', () => {
    const frame = deliverFrame(0n, [amqpMessage('a')], 2);
    expect(() => parseDeliver(frame, 's', 0n)).toThrow(/1 records found, 2 declared/);
  });

  it('keeps only the messages at or after the offset the reader asked for', () => {
    const frame = deliverFrame(10n, [amqpMessage('a'), amqpMessage('b'), amqpMessage('c')]);

    const { chunk, nextOffset } = parseDeliver(frame, 's', 11n);

    expect(chunk === undefined ? [] : offsetsOf([chunk])).toEqual([11n, 12n]);
    expect(chunk === undefined ? [] : messagesOf([chunk])).toEqual([
      amqpMessage('b'),
      amqpMessage('c'),
    ]);
    expect(nextOffset).toBe(13n);
  });

  it('delivers nothing of a chunk that ends before the offset the reader asked for', () => {
    const frame = deliverFrame(10n, [amqpMessage('a'), amqpMessage('b')]);

    expect(parseDeliver(frame, 's', 12n)).toMatchObject({ chunk: undefined, nextOffset: 12n });
  });

  it('counts the records of a sub-entry batch, not its entries, for the offsets and the next offset', () => {
    const batch = Buffer.from(
      encodeSubEntryBatch([amqpMessage('a'), amqpMessage('b'), amqpMessage('c')]),
    );
    const frame = deliverFrameOf(20n, [batch, Buffer.concat([uint32(2), Buffer.from('dd')])], 4);

    const { chunk, chunkId, nextOffset } = parseDeliver(frame, 's', 21n);

    expect(chunkId).toBe(20n);
    expect(nextOffset).toBe(24n);
    expect(chunk === undefined ? [] : offsetsOf([chunk])).toEqual([21n, 22n, 23n]);
    expect(chunk === undefined ? [] : messagesOf([chunk])).toEqual([
      amqpMessage('b'),
      amqpMessage('c'),
      Buffer.from('dd'),
    ]);
  });
});
