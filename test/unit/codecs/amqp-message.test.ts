import { describe, expect, it } from 'vitest';
import {
  BodyKind,
  CodecError,
  amqp,
  createMessageScan,
  dataSections,
  decodeMessage,
  encodeMessage,
  scanMessage,
  type AmqpMessage,
} from '../../../src/codecs/index.js';
import { decodeApplicationProperties } from '../../../src/codecs/amqp-message.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

const everySection: AmqpMessage = {
  header: { durable: true, priority: 9, ttl: 60_000, firstAcquirer: false, deliveryCount: 3 },
  deliveryAnnotations: { 'x-opt-delivery': 'yes' },
  messageAnnotations: { 'x-stream-filter': amqp.symbol('eu'), 'x-count': 5n },
  properties: {
    messageId: amqp.ulong(42n),
    userId: text('guest'),
    to: '/queues/q',
    subject: 'reading',
    replyTo: '/queues/r',
    correlationId: amqp.uuid('f81d4fae-7dec-11d0-a765-00a0c91e6bf6'),
    contentType: 'application/msgpack',
    contentEncoding: 'gzip',
    absoluteExpiryTime: 1_700_000_060_000,
    creationTime: 1_700_000_000_000,
    groupId: 'sensors',
    groupSequence: 7,
    replyToGroupId: 'replies',
  },
  applicationProperties: { source: 'in', first: '0', n: 1, big: 2n, flag: true, none: null },
  body: { type: 'data', sections: [text('one'), text('two'), new Uint8Array(300)] },
  footer: { 'x-hash': text('abc') },
};

describe('AMQP 1.0 message sections', () => {
  it('should round-trip a message with every section and several data sections', () => {
    expect(decodeMessage(encodeMessage(everySection))).toEqual(everySection);
  });

  it('should round-trip each section on its own', () => {
    const messages: AmqpMessage[] = [
      { header: {} },
      { header: { priority: 4 } },
      { deliveryAnnotations: {} },
      { messageAnnotations: { 'x-a': 1 } },
      { properties: {} },
      { properties: { messageId: 'id', correlationId: text('c') } },
      { properties: { creationTime: 0 } },
      { applicationProperties: { a: 'b' } },
      { body: { type: 'data', sections: [] } },
      { body: { type: 'data', sections: [new Uint8Array(0)] } },
      { body: { type: 'sequence', sections: [[1, 'a'], [], [amqp.symbol('s')]] } },
      { body: { type: 'value', value: new Map([['k', [1, 2]]]) } },
      { body: { type: 'value', value: null } },
      { footer: { 'x-f': amqp.uint(1) } },
      {},
    ];
    for (const message of messages) {
      const decoded = decodeMessage(encodeMessage(message));
      // An empty data body has no section on the wire, so it decodes as no body.
      const expected =
        message.body?.type === 'data' && message.body.sections.length === 0
          ? { ...message, body: undefined }
          : message;
      expect(decoded).toEqual(expected);
    }
  });

  it('should write the data section descriptor 0x00 0x53 0x75 followed by vbin8', () => {
    // OASIS AMQP 1.0 part 3 §3.2.6: data is described by amqp:data:binary, 0x00000000:0x00000075.
    expect(hex(encodeMessage({ body: { type: 'data', sections: [text('hi')] } }))).toBe(
      '005375a0026869',
    );
  });

  it('should write the sections in the order of part 3 §3.2 with their descriptor codes', () => {
    const bytes = encodeMessage({
      footer: {},
      body: { type: 'value', value: 'v' },
      applicationProperties: {},
      properties: {},
      messageAnnotations: {},
      deliveryAnnotations: {},
      header: {},
    });
    expect(hex(bytes)).toBe(
      [
        '00537045', // header: list0
        '005371c10100', // delivery-annotations: empty map8
        '005372c10100',
        '00537345', // properties: list0
        '005374c10100',
        '005377a10176', // amqp-value "v"
        '005378c10100', // footer
      ].join(''),
    );
  });

  it('should drop trailing null fields of the properties list', () => {
    // message-id "a", then 8 nulls, then creation-time: 10 fields, no trailing nulls.
    const bytes = encodeMessage({ properties: { messageId: 'a', creationTime: 1 } });
    expect(hex(bytes)).toBe('005373c0150aa10161' + '40'.repeat(8) + '830000000000000001');
  });

  it('should encode deterministically, keeping record insertion order', () => {
    const a = encodeMessage({ applicationProperties: { b: '1', a: '2' } });
    const b = encodeMessage({ applicationProperties: { b: '1', a: '2' } });
    const c = encodeMessage({ applicationProperties: { a: '2', b: '1' } });
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(Object.keys(decodeMessage(a).applicationProperties ?? {})).toEqual(['b', 'a']);
  });

  it('should return data sections as views of the input bytes', () => {
    const bytes = encodeMessage({ body: { type: 'data', sections: [text('abc')] } });
    const body = decodeMessage(bytes).body;
    if (body?.type !== 'data') throw new Error('expected a data body');
    const section = body.sections[0] as Uint8Array;
    expect(section.buffer).toBe(bytes.buffer);
    expect(section.byteOffset).toBe(5);
  });

  it('should decode a message inside a larger buffer between start and end', () => {
    const message = encodeMessage({ body: { type: 'value', value: 'x' } });
    const buffer = new Uint8Array(message.length + 10);
    buffer.set(message, 4);
    expect(decodeMessage(buffer, 4, 4 + message.length)).toEqual({
      body: { type: 'value', value: 'x' },
    });
  });

  it('should accept symbolic and ulong section descriptors', () => {
    const symbolic = new Uint8Array([
      0x00,
      0xa3,
      16,
      ...text('amqp:data:binary'),
      0xa0,
      1,
      7,
      0x00,
      0x80,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0x75,
      0xa0,
      1,
      8,
    ]);
    expect(decodeMessage(symbolic)).toEqual({
      body: { type: 'data', sections: [new Uint8Array([7]), new Uint8Array([8])] },
    });
    expect(dataSections(symbolic)).toEqual([new Uint8Array([7]), new Uint8Array([8])]);
  });

  it('should refuse application property values that are not simple types', () => {
    expect(() => encodeMessage({ applicationProperties: { list: [1] } })).toThrow(CodecError);
    expect(() => encodeMessage({ applicationProperties: { map: new Map() } })).toThrow(
      /simple value/,
    );
  });

  it('should keep a __proto__ key as a plain entry', () => {
    const applicationProperties = JSON.parse('{"__proto__": "x"}') as Record<string, string>;
    const decoded = decodeMessage(encodeMessage({ applicationProperties }));
    expect(Object.keys(decoded.applicationProperties ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(decoded.applicationProperties)).toBe(Object.prototype);
  });
});

describe('AMQP 1.0 message decoding errors', () => {
  const fail = (bytes: number[], pattern: RegExp, position: number): void => {
    let caught: unknown;
    try {
      decodeMessage(new Uint8Array(bytes));
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(CodecError);
    expect((caught as CodecError).message).toMatch(pattern);
    expect((caught as CodecError).position).toBe(position);
  };

  it('should reject a section that is not a described type', () => {
    fail([0x40, 0x40], /expected a message section/, 0);
  });

  it('should reject an unknown section descriptor', () => {
    fail([0x00, 0x53, 0x10, 0x45], /unknown message section/, 1);
  });

  it('should reject sections out of order and a second header', () => {
    fail([0x00, 0x53, 0x73, 0x45, 0x00, 0x53, 0x70, 0x45], /may not follow/, 4);
    fail([0x00, 0x53, 0x70, 0x45, 0x00, 0x53, 0x70, 0x45], /may not follow/, 4);
  });

  it('should reject a body mixing data and amqp-value sections', () => {
    fail([0x00, 0x53, 0x75, 0xa0, 0x00, 0x00, 0x53, 0x77, 0x40], /may not follow/, 5);
  });

  it('should reject a data section that is not binary', () => {
    fail([0x00, 0x53, 0x75, 0xa1, 0x00], /not binary/, 0);
  });

  it('should reject a properties field of the wrong type', () => {
    fail([0x00, 0x53, 0x73, 0xc0, 0x04, 0x03, 0x40, 0x40, 0x41], /properties.to/, 0);
  });

  it('should reject annotations whose keys are neither symbols nor strings', () => {
    fail([0x00, 0x53, 0x72, 0xc1, 0x03, 0x02, 0x40, 0x40], /key must be a symbol/, 0);
  });
});

describe('message scan', () => {
  it('should find the first data section, the count and the creation time', () => {
    const bytes = encodeMessage(everySection);
    const scan = createMessageScan();
    scanMessage(bytes, 0, bytes.length, scan);
    expect(new TextDecoder().decode(bytes.subarray(scan.bodyStart, scan.bodyEnd))).toBe('one');
    expect(scan.dataSections).toBe(3);
    expect(scan.creationTime).toBe(1_700_000_000_000);
    expect(scan.bodyKind).toBe(BodyKind.Data);
  });

  it('should report NaN creation time when properties are absent or the field is null', () => {
    const scan = createMessageScan();
    for (const message of [{}, { properties: {} }, { properties: { messageId: 'x' } }]) {
      const bytes = encodeMessage(message);
      scanMessage(bytes, 0, bytes.length, scan);
      expect(scan.creationTime).toBeNaN();
    }
  });

  it('should point at the start with no body', () => {
    const bytes = encodeMessage({ applicationProperties: { a: 'b' } });
    const buffer = new Uint8Array(bytes.length + 3);
    buffer.set(bytes, 3);
    const scan = createMessageScan();
    scanMessage(buffer, 3, buffer.length, scan);
    expect(scan).toEqual({
      bodyStart: 3,
      bodyEnd: 3,
      dataSections: 0,
      creationTime: NaN,
      bodyKind: BodyKind.None,
    });
  });

  it('should point at the payload of an amqp-value holding a string or binary', () => {
    const scan = createMessageScan();
    const bytes = encodeMessage({ body: { type: 'value', value: 'x'.repeat(300) } });
    scanMessage(bytes, 0, bytes.length, scan);
    expect(scan.bodyKind).toBe(BodyKind.ValuePayload);
    expect(scan.bodyEnd - scan.bodyStart).toBe(300);
    expect(scan.bodyEnd).toBe(bytes.length);
  });

  it('should point at the encoded value of any other amqp-value or amqp-sequence', () => {
    const scan = createMessageScan();
    const bytes = encodeMessage({ body: { type: 'sequence', sections: [[1], [2]] } });
    scanMessage(bytes, 0, bytes.length, scan);
    expect(scan.bodyKind).toBe(BodyKind.Encoded);
    expect(hex(bytes.subarray(scan.bodyStart, scan.bodyEnd))).toBe('c003015401');
  });

  it('should reuse the scan object and reset it for every message', () => {
    const scan = createMessageScan();
    const withData = encodeMessage({
      properties: { creationTime: 5 },
      body: { type: 'data', sections: [text('a')] },
    });
    const without = encodeMessage({});
    scanMessage(withData, 0, withData.length, scan);
    scanMessage(without, 0, without.length, scan);
    expect(scan.dataSections).toBe(0);
    expect(scan.creationTime).toBeNaN();
  });

  it('should throw CodecError on truncated framing', () => {
    const bytes = encodeMessage(everySection);
    const scan = createMessageScan();
    expect(() => {
      scanMessage(bytes, 0, bytes.length - 1, scan);
    }).toThrow(CodecError);
    expect(() => {
      scanMessage(bytes, 0, bytes.length + 1, scan);
    }).toThrow(/invalid message range/);
  });

  it('should list every data section as a view', () => {
    const bytes = encodeMessage(everySection);
    const sections = dataSections(bytes);
    expect(sections.map((s) => s.length)).toEqual([3, 3, 300]);
    expect(sections[0]?.buffer).toBe(bytes.buffer);
  });
});

describe('decodeApplicationProperties', () => {
  it("gives a message's application properties as decodeMessage does, or undefined without them", () => {
    const bytes = encodeMessage(everySection);
    expect(decodeApplicationProperties(bytes)).toEqual(decodeMessage(bytes).applicationProperties);
    expect(decodeApplicationProperties(encodeMessage({ properties: { subject: 's' } }))).toBe(
      undefined,
    );
    const framed = new Uint8Array([9, ...bytes, 9]);
    expect(decodeApplicationProperties(framed, 1, framed.length - 1)).toEqual(
      everySection.applicationProperties,
    );
  });

  it('stops before the body: bytes after the properties are not read', () => {
    const message = encodeMessage({
      applicationProperties: { 'sw-part': '0' },
      body: { type: 'data', sections: [text('abc')] },
    });
    // The body's size field claims more than there is: decodeMessage refuses it.
    const broken = message.slice(0, -2);
    expect(() => decodeMessage(broken)).toThrow(CodecError);
    expect(decodeApplicationProperties(broken)).toEqual({ 'sw-part': '0' });
  });

  it('refuses malformed sections before the body', () => {
    expect(() => decodeApplicationProperties(new Uint8Array([0x00, 0x53, 0x74, 0x45]))).toThrow(
      CodecError,
    );
    expect(() => decodeApplicationProperties(new Uint8Array([0x01]))).toThrow(CodecError);
  });
});
