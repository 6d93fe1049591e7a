import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { amqp, decodeMessage, encodeMessage } from '../../../src/codecs/index.js';

// rhea (a dev dependency) is an independent AMQP 1.0 codec: bytes written by one side must
// read back the same on the other.
interface RheaMessageCodec {
  encode(message: Record<string, unknown>): Buffer;
  decode(buffer: Buffer): Record<string, unknown>;
  data_section(data: Buffer): unknown;
  data_sections(data: Buffer[]): unknown;
  sequence_sections(lists: unknown[][]): unknown;
}
interface RheaTypes {
  wrap_symbol(value: string): unknown;
  wrap_ulong(value: number): unknown;
}
const rhea = createRequire(import.meta.url)('rhea') as {
  message: RheaMessageCodec;
  types: RheaTypes;
};

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.length);

describe('cross-check against rhea', () => {
  it('should be read by rhea when we encode properties, application properties and data', () => {
    const bytes = encodeMessage({
      header: { durable: true, priority: 5, ttl: 1000, deliveryCount: 2 },
      messageAnnotations: { 'x-opt-partition': 'p1' },
      properties: {
        messageId: 'm-1',
        to: 'stream',
        subject: 'reading',
        contentType: 'application/msgpack',
        creationTime: 1_700_000_000_123,
        groupId: 'g',
        groupSequence: 9,
      },
      applicationProperties: { source: 'sensors', count: 3, big: 300 },
      body: { type: 'data', sections: [text('payload')] },
    });
    const decoded = rhea.message.decode(asBuffer(bytes));
    expect(decoded.durable).toBe(true);
    expect(decoded.priority).toBe(5);
    expect(decoded.ttl).toBe(1000);
    expect(decoded.delivery_count).toBe(2);
    expect(decoded.message_annotations).toEqual({ 'x-opt-partition': 'p1' });
    expect(decoded.message_id).toBe('m-1');
    expect(decoded.to).toBe('stream');
    expect(decoded.subject).toBe('reading');
    expect(decoded.content_type).toBe('application/msgpack');
    expect((decoded.creation_time as Date).getTime()).toBe(1_700_000_000_123);
    expect(decoded.group_id).toBe('g');
    expect(decoded.group_sequence).toBe(9);
    expect(decoded.application_properties).toEqual({ source: 'sensors', count: 3, big: 300 });
    const body = decoded.body as { typecode: number; content: Buffer };
    expect(body.typecode).toBe(0x75);
    expect(Buffer.from(body.content).toString()).toBe('payload');
  });

  it('should be read by rhea when we encode several data sections', () => {
    const bytes = encodeMessage({
      body: { type: 'data', sections: [text('a'), text('bb'), new Uint8Array(300).fill(1)] },
    });
    const body = rhea.message.decode(asBuffer(bytes)).body as {
      typecode: number;
      multiple: boolean;
      content: Buffer[];
    };
    expect(body.typecode).toBe(0x75);
    expect(body.multiple).toBe(true);
    expect(body.content.map((b) => b.length)).toEqual([1, 2, 300]);
  });

  it('should be read by rhea when we encode an amqp-value and amqp-sequence sections', () => {
    const value = rhea.message.decode(
      asBuffer(encodeMessage({ body: { type: 'value', value: ['x', 1, 2.5, true, null] } })),
    );
    expect(value.body).toEqual(['x', 1, 2.5, true, null]);
    const sequence = rhea.message.decode(
      asBuffer(encodeMessage({ body: { type: 'sequence', sections: [[1, 2], ['three']] } })),
    );
    expect((sequence.body as { content: unknown }).content).toEqual([[1, 2], ['three']]);
  });

  it('should read what rhea encodes with properties, annotations and one data section', () => {
    const bytes = rhea.message.encode({
      durable: true,
      priority: 7,
      message_id: 'rhea-1',
      reply_to: 'back',
      correlation_id: 'c-1',
      content_encoding: 'gzip',
      creation_time: new Date(1_700_000_000_000),
      absolute_expiry_time: new Date(1_700_000_100_000),
      message_annotations: { 'x-opt-a': 'b' },
      delivery_annotations: { 'x-opt-d': 1 },
      application_properties: { k: 'v', n: -5, f: 1.25, yes: false },
      body: rhea.message.data_section(Buffer.from('hello')),
    });
    const message = decodeMessage(new Uint8Array(bytes));
    expect(message.header).toEqual({ durable: true, priority: 7 });
    expect(message.properties).toEqual({
      messageId: 'rhea-1',
      replyTo: 'back',
      correlationId: 'c-1',
      contentEncoding: 'gzip',
      creationTime: 1_700_000_000_000,
      absoluteExpiryTime: 1_700_000_100_000,
    });
    expect(message.messageAnnotations).toEqual({ 'x-opt-a': 'b' });
    expect(message.deliveryAnnotations).toEqual({ 'x-opt-d': amqp.uint(1) });
    expect(message.applicationProperties).toEqual({ k: 'v', n: -5, f: 1.25, yes: false });
    expect(message.body).toEqual({ type: 'data', sections: [text('hello')] });
  });

  it('should read a footer that rhea encodes, which it writes with string keys', () => {
    // rhea writes the footer before the body, against part 3 §3.2; with no body it is last.
    const bytes = rhea.message.encode({ footer: { 'x-f': 'z' }, body: undefined });
    const withoutBody = bytes.subarray(0, bytes.length - 4); // drop rhea's amqp-value null
    expect(decodeMessage(new Uint8Array(withoutBody)).footer).toEqual({ 'x-f': 'z' });
  });

  it('should read several data sections, a sequence and a value encoded by rhea', () => {
    const data = decodeMessage(
      new Uint8Array(
        rhea.message.encode({
          body: rhea.message.data_sections([Buffer.from('1'), Buffer.from('22')]),
        }),
      ),
    );
    expect(data.body).toEqual({ type: 'data', sections: [text('1'), text('22')] });
    const sequence = decodeMessage(
      new Uint8Array(rhea.message.encode({ body: rhea.message.sequence_sections([[1], ['a']]) })),
    );
    expect(sequence.body).toEqual({ type: 'sequence', sections: [[amqp.uint(1)], ['a']] });
    const value = decodeMessage(
      new Uint8Array(rhea.message.encode({ body: { list: [1, 'x'], big: 2 ** 40 } })),
    );
    expect(value.body).toEqual({
      type: 'value',
      value: new Map<unknown, unknown>([
        ['list', [amqp.uint(1), 'x']],
        ['big', amqp.ulong(2n ** 40n)],
      ]),
    });
  });
});
