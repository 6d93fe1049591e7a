import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';
import { bytes, single, text } from './helpers.js';

describe('the embedded stream log', () => {
  it('numbers messages from offset 0 across chunks', () => {
    const broker = new MemoryBroker({ now: () => 1_000 });
    broker.createStream('s');
    expect(broker.append('s', bytes('a', 'b'))).toBe(0n);
    expect(broker.append('s', bytes('c'))).toBe(2n);
    expect(broker.messages('s').map((m) => [m.offset, text(m.bytes)])).toEqual([
      [0n, 'a'],
      [1n, 'b'],
      [2n, 'c'],
    ]);
  });

  it('keeps each append as one chunk stamped by the injected clock', () => {
    let clock = 100;
    const broker = new MemoryBroker({ now: () => clock++ });
    broker.createStream('s');
    broker.append('s', bytes('a', 'b'));
    broker.append('s', bytes('c'), { timestamp: 50 });
    broker.append('s', bytes('d'));
    expect(broker.chunks('s').map((c) => [c.firstOffset, c.timestamp, c.messages.length])).toEqual([
      [0n, 100, 2],
      [2n, 50, 1],
      [3n, 101, 1],
    ]);
    expect(broker.messages('s').map((m) => m.chunkTimestamp)).toEqual([100, 100, 50, 101]);
  });

  it('copies messages in and out so callers cannot rewrite history', () => {
    const broker = new MemoryBroker();
    broker.createStream('s');
    const message = single(bytes('a'));
    broker.append('s', [message]);
    message[0] = 0x7a;
    single(broker.messages('s')).bytes[0] = 0x7a;
    expect(text(single(broker.messages('s')).bytes)).toBe('a');
  });

  it('treats creating an existing stream as done and keeps its messages', () => {
    const broker = new MemoryBroker();
    broker.createStream('s');
    broker.append('s', bytes('a'));
    broker.createStream('s');
    expect(broker.messages('s')).toHaveLength(1);
  });

  it('forgets a deleted stream and starts a recreated one from offset 0', () => {
    const broker = new MemoryBroker();
    broker.createStream('s');
    broker.append('s', bytes('a'));
    broker.deleteStream('s');
    expect(() => broker.messages('s')).toThrow(StreamNotFoundError);
    expect(() => broker.deleteStream('s')).toThrow(StreamNotFoundError);
    broker.createStream('s');
    expect(broker.append('s', bytes('b'))).toBe(0n);
  });

  it('refuses an empty append and a stream that does not exist', () => {
    const broker = new MemoryBroker();
    broker.createStream('s');
    expect(() => broker.append('s', [])).toThrow(ConfigError);
    expect(() => broker.append('nope', bytes('a'))).toThrow(StreamNotFoundError);
    expect(() => broker.source('nope')).toThrow(StreamNotFoundError);
    expect(() => broker.target('nope', { producer: 'p' })).toThrow(StreamNotFoundError);
  });
});
