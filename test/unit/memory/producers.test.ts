import { describe, expect, it } from 'vitest';
import { PublishError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { bytes, text } from './helpers.js';

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 7 });
  broker.createStream('out');
  return broker;
}

describe('named producers', () => {
  it('report 0 as the last publishing id of a name that never published', async () => {
    const broker = setup();
    await expect(broker.target('out', { producer: 'job' }).lastPublishingId()).resolves.toBe(0n);
  });

  it('store a publish with a higher id and report that id', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    await target.publish(5n, bytes('r5'));
    await target.publish(9n, bytes('r9'));
    await expect(target.lastPublishingId()).resolves.toBe(9n);
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['r5', 'r9']);
  });

  it('confirm and discard a publish with the same or a lower id', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    await target.publish(5n, bytes('first'));
    await expect(target.publish(5n, bytes('same'))).resolves.toBeUndefined();
    await expect(target.publish(3n, bytes('lower'))).resolves.toBeUndefined();
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['first']);
    await expect(target.lastPublishingId()).resolves.toBe(5n);
  });

  it('store id 0 from an unknown name once, then discard it as a duplicate', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    await target.publish(0n, bytes('zero'));
    await target.publish(0n, bytes('zero again'));
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['zero']);
    await expect(target.lastPublishingId()).resolves.toBe(0n);
  });

  it('deduplicate per producer name, across target instances of that name', async () => {
    const broker = setup();
    await broker.target('out', { producer: 'a' }).publish(5n, bytes('a5'));
    await broker.target('out', { producer: 'b' }).publish(1n, bytes('b1'));
    // Another process's: the first target of 'a' is still declared on this one's connection.
    const restarted = broker.target('out', { producer: 'a', connection: 'restarted' });
    await expect(restarted.lastPublishingId()).resolves.toBe(5n);
    await restarted.publish(5n, bytes('a5 again'));
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['a5', 'b1']);
  });

  it('deduplicate per stream', async () => {
    const broker = setup();
    broker.createStream('other');
    await broker.target('out', { producer: 'job' }).publish(5n, bytes('x'));
    await expect(broker.target('other', { producer: 'job' }).lastPublishingId()).resolves.toBe(0n);
  });

  it('give each message of a sub-entry batch its own offset under one publishing id and one chunk', async () => {
    const broker = setup();
    broker.append('out', bytes('raw'));
    const target = broker.target('out', { producer: 'job' });
    await target.publish(10n, bytes('k1', 'k2', 'k3'));
    await target.publish(10n, bytes('k1', 'k2', 'k3'));
    expect(broker.chunks('out').map((c) => [c.firstOffset, c.messages.length, c.writer])).toEqual([
      [0n, 1, undefined],
      [1n, 3, { producer: 'job', publishingId: 10n }],
    ]);
    expect(broker.messages('out').map((m) => [m.offset, text(m.bytes)])).toEqual([
      [0n, 'raw'],
      [1n, 'k1'],
      [2n, 'k2'],
      [3n, 'k3'],
    ]);
  });

  it('store pipelined publishes in call order', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    await Promise.all([target.publish(1n, bytes('1')), target.publish(2n, bytes('2'))]);
    expect(broker.messages('out').map((m) => text(m.bytes))).toEqual(['1', '2']);
  });

  it('refuse a publish to a deleted stream with a permanent error', async () => {
    const broker = setup();
    const target = broker.target('out', { producer: 'job' });
    broker.deleteStream('out');
    const error = await target.publish(1n, bytes('x')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ retriable: false, responseCode: 2 });
  });

  it('refuse an empty write and a negative publishing id with a permanent error', async () => {
    const target = setup().target('out', { producer: 'job' });
    await expect(target.publish(1n, [])).rejects.toMatchObject({ retriable: false });
    await target.lastPublishingId(); // re-arms the target after the failed publish
    await expect(target.publish(-1n, bytes('x'))).rejects.toMatchObject({ retriable: false });
  });
});
