// The embedded broker takes the stream names RabbitMQ serves and refuses the others with a
// ConfigError at every call naming a stream (checkStreamName), as the RabbitMQ adapter does,
// not with StreamNotFoundError and not by creating a stream RabbitMQ would not serve.
import { describe, expect, it } from 'vitest';
import { aggregate, ConfigError } from '../../../src/index.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';

const tooLong = 'x'.repeat(234); // 233 bytes is RabbitMQ's longest on vhost '/'
const multibyte = 'é'.repeat(128); // 256 UTF-8 bytes

describe('stream names on the embedded broker', () => {
  it('creates a stream of 233 bytes and refuses 234, 256 of é, empty, amq. and CR/LF names', () => {
    const broker = new MemoryBroker();
    broker.createStream('x'.repeat(233));
    expect(broker.messages('x'.repeat(233))).toEqual([]);
    for (const name of [tooLong, multibyte, '', 'amq.orders', 'orders\n']) {
      expect(() => broker.createStream(name)).toThrow(ConfigError);
    }
    expect(() => broker.createStream(multibyte)).toThrow(
      /^stream must be at most 233 UTF-8 bytes .*not 256/,
    );
  });

  it('refuses such a name with a ConfigError at every call naming a stream', () => {
    const broker = new MemoryBroker();
    const calls: [string, () => unknown][] = [
      ['source', () => broker.source(tooLong)],
      ['single active source', () => broker.source(tooLong, { singleActive: { name: 'g' } })],
      ['target', () => broker.target(tooLong, { producer: 'p' })],
      ['producer', () => broker.producer(multibyte)],
      ['append', () => broker.append(tooLong, [new Uint8Array(1)])],
      ['messages', () => broker.messages(tooLong)],
      ['deleteStream', () => broker.deleteStream(tooLong)],
      ['truncate', () => broker.truncate(tooLong, 0n)],
      ['holdConfirms', () => broker.holdConfirms(tooLong)],
      ['partitions', () => broker.partitions(tooLong)],
      ['superStreamSource', () => broker.superStreamSource(tooLong)],
    ];
    for (const [name, call] of calls) expect(call, name).toThrow(ConfigError);
    // A good name of no stream is still a missing stream.
    expect(() => broker.source('absent')).toThrow(StreamNotFoundError);
  });

  it('creates no partition of a super stream when one of their names is too long', () => {
    const broker = new MemoryBroker();
    expect(() =>
      broker.createSuperStream('orders', { bindingKeys: ['eu', 'k'.repeat(227)] }),
    ).toThrow(/^partition must be at most 233 UTF-8 bytes .*not 234/);
    expect(() => broker.source('orders-eu')).toThrow(StreamNotFoundError);
    expect(() => broker.createSuperStream('s'.repeat(232), { partitions: 2 })).toThrow(ConfigError);
    expect(broker.createSuperStream('s'.repeat(231), { partitions: 2 })).toHaveLength(2);
  });

  it('fails a job on such a source before it runs', () => {
    const broker = new MemoryBroker();
    broker.createStream('out');
    expect(() =>
      aggregate(broker.source(tooLong))
        .count(1)
        .reduce((n: number) => n + 1, 0)
        .to(broker.target('out', { producer: 'p' })),
    ).toThrow(ConfigError);
  });
});
