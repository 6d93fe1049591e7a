// Strings on the stream protocol: every one is an int16 byte count then its UTF-8 bytes, so
// any name works whatever its characters, and one over 32,767 bytes (a producer or group name
// over RabbitMQ's 255, a stream name over 233: test/unit/common/stream-protocol.test.ts) is a
// ConfigError where it is given, before anything is sent. The frames
// below are the client's requests, encoded with our fix (gaps/utf8-strings.ts) in place; any
// string reads back whole: test/property/utf8-strings.test.ts.
import { CreateStreamRequest } from 'rabbitmq-stream-js-client/dist/requests/create_stream_request.js';
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import { SaslAuthenticateRequest } from 'rabbitmq-stream-js-client/dist/requests/sasl_authenticate_request.js';
import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError } from '../../../../src/index.js';
import { MemoryBroker } from '../../../../src/memory/index.js';
import { connect, rabbitSource } from '../../../../src/rabbitmq/index.js';
import { writeStringsAsUtf8 } from '../../../../src/rabbitmq/gaps/utf8-strings.js';
import { HEADER, stringAt } from '../../../support/clients/request-strings.js';

writeStringsAsUtf8();

/** Nothing listens on port 1: a name that passed the checks would fail to connect instead. */
const nowhere = {
  hostname: '127.0.0.1',
  port: 1,
  username: 'guest',
  password: 'guest',
  vhost: '/',
};

describe('strings in stream-protocol frames', () => {
  it('carry their UTF-8 byte count, so non-ASCII names read back whole and the frame ends where its size says', () => {
    const frame = new DeclarePublisherRequest({
      publisherId: 3,
      publisherRef: 'größe',
      stream: 'rollup-é',
    }).toBuffer(undefined, 1);

    const producer = stringAt(frame, HEADER + 1);
    const stream = stringAt(frame, producer.next);

    expect(frame.readInt16BE(HEADER + 1)).toBe(7); // 5 characters, 7 bytes
    expect([producer.text, stream.text]).toEqual(['größe', 'rollup-é']);
    expect(stream.next).toBe(frame.length);
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
  });

  it('take a string of exactly 32,767 UTF-8 bytes and refuse one byte more with a ConfigError naming its length', () => {
    const longest = `${'é'.repeat(16_383)}a`; // 16,384 characters, 32,767 bytes
    const frame = new CreateStreamRequest({ stream: longest, arguments: {} }).toBuffer(
      undefined,
      1,
    );
    const written = stringAt(frame, HEADER);
    expect(frame.readInt16BE(HEADER)).toBe(32_767);
    expect(written.text === longest).toBe(true); // compared whole, without a 32 KB diff

    // 16,384 characters: under the limit counted in characters, over it in bytes.
    const tooLong = new CreateStreamRequest({ stream: 'é'.repeat(16_384), arguments: {} });
    expect(() => tooLong.toBuffer(undefined, 1)).toThrow(ConfigError);
    expect(() => tooLong.toBuffer(undefined, 1)).toThrow(/at most 32767 UTF-8 bytes .*not 32768/);
  });

  it('size the SASL PLAIN response by the bytes of user and password', () => {
    const frame = new SaslAuthenticateRequest({
      mechanism: 'PLAIN',
      username: 'jürgen',
      password: 'pässwörd',
    }).toBuffer(undefined, 1);

    const mechanism = stringAt(frame, HEADER);
    const size = frame.readUInt32BE(mechanism.next);
    const response = frame.subarray(mechanism.next + 4);

    expect(mechanism.text).toBe('PLAIN');
    expect(size).toBe(response.length);
    expect(response).toEqual(Buffer.from('\0jürgen\0pässwörd', 'utf8'));
  });
});

describe('names given to the library', () => {
  it('are refused for the handshake before connecting, where the client would throw from its socket listener', async () => {
    // Nothing listens at `nowhere`: a check made only once connected would never be reached.
    await expect(connect({ ...nowhere, vhost: 'v'.repeat(40_000) })).rejects.toThrow(
      /^vhost must be at most 32767 UTF-8 bytes .*not 40000/,
    );
    await expect(connect({ ...nowhere, connectionName: 'é'.repeat(16_384) })).rejects.toThrow(
      /^connectionName must be at most 32767 UTF-8 bytes .*not 32768/,
    );
  });

  it('are refused as producer or group names over 255 UTF-8 bytes, as RabbitMQ refuses them', () => {
    const broker = new MemoryBroker();
    broker.createStream('größe');
    expect(broker.target('größe', { producer: 'é'.repeat(127) + 'p' }).producer).toHaveLength(128);
    expect(() => broker.target('größe', { producer: 'é'.repeat(128) })).toThrow(
      /^producer must be at most 255 UTF-8 bytes .*not 256/,
    );
    expect(() =>
      rabbitSource('größe', { connection: nowhere, singleActive: { name: 'g'.repeat(256) } }),
    ).toThrow(/^singleActive\.name must be at most 255 UTF-8 bytes .*not 256/);
    expect(() => broker.source('größe', { singleActive: { name: 'g'.repeat(256) } })).toThrow(
      /^singleActive\.name must be at most 255 UTF-8 bytes .*not 256/,
    );

    broker.createSuperStream('orders', { partitions: 2 });
    const builder = aggregate(broker.superStreamSource('orders'))
      .count(3)
      .reduce((n: number) => n + 1, 0);
    expect(() =>
      builder.toPartitions((p) => broker.target('größe', p), { name: 'j'.repeat(256) }),
    ).toThrow(/^name must be at most 255 UTF-8 bytes .*not 256/);
  });
});
