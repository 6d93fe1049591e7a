import { describe, expect, it } from 'vitest';
import { ConfigError, SourceDeactivatedError } from '../../../src/index.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';
import { bytes, chunkTexts, settle } from './helpers.js';

function partitionOne(): { broker: MemoryBroker; stream: string } {
  const broker = new MemoryBroker({ now: () => 1 });
  const [, stream = ''] = broker.createSuperStream('orders', { partitions: 2 });
  broker.append(stream, bytes('a', 'b'));
  broker.append(stream, bytes('c'));
  return { broker, stream };
}

describe("the embedded broker's single active source", () => {
  it('delivers from a plain start value once active, and leaves its group when the read is aborted', async () => {
    const { broker, stream } = partitionOne();
    const source = broker.source(stream, { singleActive: { name: 'job' } });
    const stop = new AbortController();
    const read: [bigint, string][] = [];
    for await (const chunk of source.read(1n, stop.signal)) {
      read.push(...chunkTexts(chunk));
      if (read.length === 2) stop.abort();
    }
    expect(read).toEqual([
      [1n, 'b'],
      [2n, 'c'],
    ]);
    expect(broker.consumerGroup(stream, 'job').members).toEqual([]);
  });

  it('fails its read on a step-down, answers only when the signal aborts, and keeps its place in the group', async () => {
    const { broker, stream } = partitionOne();
    const source = broker.source(stream, { singleActive: { name: 'job' } });
    const stop = new AbortController();
    const iterator = source.read('first', stop.signal)[Symbol.asyncIterator]();
    await iterator.next();
    const member = source.groupMember;
    const other = broker.singleActive(stream, {
      name: 'job',
      resumeFrom: () => Promise.resolve('first' as const),
    });
    await expect(iterator.next()).rejects.toThrow(new SourceDeactivatedError(stream, 'job', 2n));
    await settle();
    expect(broker.consumerGroup(stream, 'job')).toMatchObject({ deactivating: member });
    expect(other.active).toBe(false);
    stop.abort();
    await settle();
    expect(other.active).toBe(true);
    expect(broker.consumerGroup(stream, 'job').members).toEqual([member, other]);
    await source.close();
    await other.close();
    expect(broker.consumerGroup(stream, 'job').members).toEqual([]);
  });

  it('refuses a second read while one runs, and a group without a name', async () => {
    const { broker, stream } = partitionOne();
    const source = broker.source(stream, { singleActive: { name: 'job' } });
    const stop = new AbortController();
    const first = source.read('first', stop.signal)[Symbol.asyncIterator]();
    await first.next();
    await expect(source.read('first', stop.signal)[Symbol.asyncIterator]().next()).rejects.toThrow(
      ConfigError,
    );
    stop.abort();
    await first.return?.(undefined);
    expect(() => broker.source(stream, { singleActive: { name: '' } })).toThrow(
      "singleActive.name must be a non-empty string, given: ''",
    );
    expect(() => broker.superStreamSource('nothing')).toThrow(StreamNotFoundError);
  });
});
