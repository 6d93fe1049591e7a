// Strings on the stream protocol, any characters: the client's requests, encoded with our fix
// (gaps/utf8-strings.ts) in place, read back whole (examples and limits:
// test/unit/rabbitmq/gaps/utf8-strings.test.ts).
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writeStringsAsUtf8 } from '../../src/rabbitmq/gaps/utf8-strings.js';
import { HEADER, stringAt } from '../support/clients/request-strings.js';

writeStringsAsUtf8();

describe('strings in stream-protocol frames', () => {
  it('read back whole for any string of any characters (property)', () => {
    let multiByte = 0;
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (name) => {
        const frame = new DeclarePublisherRequest({
          publisherId: 0,
          publisherRef: name,
          stream: name,
        }).toBuffer(undefined, 1);
        const producer = stringAt(frame, HEADER + 1);
        const stream = stringAt(frame, producer.next);
        if (Buffer.byteLength(name) > name.length) multiByte++;
        return producer.text === name && stream.text === name && stream.next === frame.length;
      }),
      { numRuns: 300 },
    );
    expect(multiByte).toBeGreaterThan(150); // mostly names the stock client breaks
  });
});
