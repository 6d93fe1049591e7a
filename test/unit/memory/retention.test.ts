import { describe, expect, it } from 'vitest';
import { ConfigError, RetentionGapError } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { bytes, chunkTexts, take, text } from './helpers.js';

/** Chunks [a] [b c] [d e f] [g] at offsets 0, 1-2, 3-5, 6. */
function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 1 });
  broker.createStream('in');
  broker.append('in', bytes('a'));
  broker.append('in', bytes('b', 'c'));
  broker.append('in', bytes('d', 'e', 'f'));
  broker.append('in', bytes('g'));
  return broker;
}

describe('retention on the embedded broker', () => {
  it('removes whole chunks from the head, keeping the chunk that holds the offset', () => {
    const broker = setup();
    expect(broker.truncate('in', 4n)).toBe(3n);
    expect(broker.messages('in').map((m) => [m.offset, text(m.bytes)])).toEqual([
      [3n, 'd'],
      [4n, 'e'],
      [5n, 'f'],
      [6n, 'g'],
    ]);
    expect(broker.truncate('in', 0n)).toBe(3n);
  });

  it('keeps offsets growing after the head is removed', () => {
    const broker = setup();
    broker.truncate('in', 7n);
    expect(broker.messages('in')).toEqual([]);
    expect(broker.append('in', bytes('h'))).toBe(7n);
  });

  it("starts a read from 'first' at the first offset still stored", async () => {
    const broker = setup();
    broker.truncate('in', 3n);
    const controller = new AbortController();
    const [chunk] = await take(broker.source('in').read('first', controller.signal), 1, controller);
    expect(chunk === undefined ? [] : chunkTexts(chunk)).toEqual([
      [3n, 'd'],
      [4n, 'e'],
      [5n, 'f'],
    ]);
  });

  it('fails a read from a removed offset with a RetentionGapError naming the missing offsets', async () => {
    const broker = setup();
    broker.truncate('in', 3n);
    const controller = new AbortController();
    const reading = take(broker.source('in').read(1n, controller.signal), 1, controller);
    await expect(reading).rejects.toBeInstanceOf(RetentionGapError);
    await expect(reading).rejects.toMatchObject({
      stream: 'in',
      offset: 1n,
      firstAvailable: 3n,
      retriable: false,
      message:
        "reading stream 'in' at offset 1 failed: offsets 1..2 were removed by the stream's " +
        'retention before they were read (the stream now starts at 3); nothing was processed',
    });
  });

  it('fails a paused read whose next offset retention removed meanwhile', async () => {
    const broker = setup();
    const controller = new AbortController();
    const reader = broker.source('in').read(0n, controller.signal)[Symbol.asyncIterator]();
    expect((await reader.next()).value).toMatchObject({ firstOffset: 0n });
    broker.truncate('in', 6n);
    await expect(reader.next()).rejects.toMatchObject({
      name: 'RetentionGapError',
      offset: 1n,
      firstAvailable: 6n,
    });
    controller.abort();
  });

  it("attaches a user consumer at the first stored offset for 'first' or a removed offset, as RabbitMQ does", () => {
    const broker = setup();
    broker.truncate('in', 1n);
    const signal = AbortSignal.abort();
    expect(broker.consumer('in', 'first', signal).startOffset).toBe(1n);
    expect(broker.consumer('in', { offset: 0n }, signal).startOffset).toBe(1n);
    expect(broker.consumer('in', { offset: 2n }, signal).startOffset).toBe(2n);
  });

  it('keeps the producer table: deduplication and the last publishing id survive retention', async () => {
    const broker = new MemoryBroker({ now: () => 1 });
    broker.createStream('out');
    const producer = broker.target('out', { producer: 'job' });
    await producer.publish(0n, bytes('r0'));
    await producer.publish(4n, bytes('r4'));
    broker.truncate('out', 2n);
    const again = broker.target('out', { producer: 'job', connection: 'restarted' });
    expect(await again.lastPublishingId()).toBe(4n);
    expect(await again.hasPublished()).toBe(true);
    await again.publish(4n, bytes('duplicate'));
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual([]);
  });

  it('rejects an offset that is not a bigint >= 0', () => {
    expect(() => setup().truncate('in', -1n)).toThrow(ConfigError);
    expect(() => setup().truncate('in', 3 as unknown as bigint)).toThrow(
      'beforeOffset must be a bigint >= 0, given: 3',
    );
  });
});

describe('whether a producer has published', () => {
  it('is false for a name that never wrote and true once it stored a write, even with id 0', async () => {
    const broker = new MemoryBroker({ now: () => 1 });
    broker.createStream('out');
    const target = broker.target('out', { producer: 'job' });
    await broker.target('out', { producer: 'other' }).publish(9n, bytes('x'));
    expect(await target.hasPublished()).toBe(false);
    await target.publish(0n, bytes('r0'));
    expect(await target.lastPublishingId()).toBe(0n);
    expect(await target.hasPublished()).toBe(true);
  });
});
