import { describe, expect, it } from 'vitest';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';
import { bytes, chunkTexts, settle, single, take } from './helpers.js';
import { sleep } from '../../../src/common/waits.js';
import { bound } from '../../support/timing.js';

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 1 });
  broker.createStream('in');
  return broker;
}

describe('reading a stream through the Source port', () => {
  it('delivers one port chunk per stored chunk', async () => {
    const broker = setup();
    broker.append('in', bytes('a', 'b'));
    broker.append('in', bytes('c'));
    const controller = new AbortController();
    const chunks = await take(broker.source('in').read(0n, controller.signal), 2, controller);
    expect(chunks.map(chunkTexts)).toEqual([
      [
        [0n, 'a'],
        [1n, 'b'],
      ],
      [[2n, 'c']],
    ]);
  });

  it('starts mid-chunk without any message before the requested offset', async () => {
    const broker = setup();
    broker.append('in', bytes('a', 'b', 'c'));
    broker.append('in', bytes('d'));
    const controller = new AbortController();
    const first = single(
      await take(broker.source('in').read(1n, controller.signal), 1, controller),
    );
    expect(first.firstOffset).toBe(1n);
    expect(first.count).toBe(2);
    expect(chunkTexts(first)).toEqual([
      [1n, 'b'],
      [2n, 'c'],
    ]);
    expect(first.bytes.length).toBe(2);
  });

  it('waits for the requested offset when it lies beyond the end', async () => {
    const broker = setup();
    const controller = new AbortController();
    const reading = take(broker.source('in').read(2n, controller.signal), 1, controller);
    broker.append('in', bytes('a'));
    broker.append('in', bytes('b', 'c', 'd'));
    expect(chunkTexts(single(await reading))).toEqual([
      [2n, 'c'],
      [3n, 'd'],
    ]);
  });

  it('wakes a waiting reader when a chunk is appended', async () => {
    const broker = setup();
    const controller = new AbortController();
    const seen: string[] = [];
    const reading = (async () => {
      for await (const chunk of broker.source('in').read(0n, controller.signal)) {
        seen.push(...chunkTexts(chunk).map(([, t]) => t));
      }
    })();
    await settle();
    expect(seen).toEqual([]);
    broker.append('in', bytes('a'));
    await settle();
    expect(seen).toEqual(['a']);
    broker.append('in', bytes('b'));
    await settle();
    expect(seen).toEqual(['a', 'b']);
    controller.abort();
    await reading;
  });

  it('ends a waiting reader when its signal aborts', async () => {
    const broker = setup();
    const controller = new AbortController();
    const reading = (async () => {
      let count = 0;
      for await (const _ of broker.source('in').read(0n, controller.signal)) count++;
      return count;
    })();
    await settle();
    controller.abort();
    await expect(reading).resolves.toBe(0);
  });

  it('stops a waiting reader with StreamNotFoundError when the stream is deleted', async () => {
    const broker = setup();
    const reading = (async () => {
      for await (const _ of broker.source('in').read(0n, new AbortController().signal)) {
        // Nothing to read.
      }
    })();
    await settle();
    broker.deleteStream('in');
    await expect(reading).rejects.toBeInstanceOf(StreamNotFoundError);
  });

  it('reports the offset one past the last message as the end', async () => {
    const broker = setup();
    const source = broker.source('in');
    await expect(source.endOffset()).resolves.toBe(0n);
    broker.append('in', bytes('a', 'b'));
    await expect(source.endOffset()).resolves.toBe(2n);
  });

  it('hands out copies, so a reader that mutates its chunk cannot change a replay', async () => {
    const broker = setup();
    broker.append('in', bytes('a'));
    const controller = new AbortController();
    const chunk = single(
      await take(broker.source('in').read(0n, controller.signal), 1, controller),
    );
    chunk.bytes[0] = 0x7a;
    const again = new AbortController();
    const replayed = single(await take(broker.source('in').read(0n, again.signal), 1, again));
    expect(chunkTexts(replayed)).toEqual([[0n, 'a']]);
  });

  it('ends a reader aborted while it lets the event loop turn, at the end of the stream', async () => {
    const broker = setup();
    // 15 chunks: the 16th step of the read lets the event loop turn, then finds no chunk.
    for (let i = 0; i < 15; i++) broker.append('in', bytes(String(i)));
    const controller = new AbortController();
    const reader = broker.source('in').read(0n, controller.signal)[Symbol.asyncIterator]();
    for (let i = 0; i < 15; i++) await reader.next();
    const next = reader.next(); // now in its turn of the event loop
    controller.abort();
    // Before the fix it waited for the stream to change, and an aborted signal never says so.
    const ended = await Promise.race([
      next,
      sleep(bound(2_000), undefined).then(() => 'still waiting'),
    ]);
    expect(ended).toEqual({ done: true, value: undefined });
  });
});
