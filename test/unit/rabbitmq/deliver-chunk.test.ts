// The Deliver frame parser on its own: malformed chunks are refused with the stream and
// offset named, before anything of them is delivered.
import { describe, expect, it } from 'vitest';
import { MalformedChunkError, parseDeliver } from '../../../src/rabbitmq/deliver-chunk.js';
import { sourceMessage } from '../../../src/index.js';

const amqpMessage = (text: string): Buffer => Buffer.from(sourceMessage(text));

function uint32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value);
  return b;
}

/** A Deliver v1 frame (without its size prefix) of simple entries. */
function deliverFrame(firstOffset: bigint, messages: Buffer[], records = messages.length): Buffer {
  const data = Buffer.concat(messages.flatMap((m) => [uint32(m.length), m]));
  const header = Buffer.alloc(5 + 48);
  header.writeUInt16BE(8, 0);
  header.writeUInt16BE(1, 2);
  header.writeUInt8(0, 4);
  header.writeUInt8(0x50, 5);
  header.writeUInt16BE(messages.length, 7);
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
});
