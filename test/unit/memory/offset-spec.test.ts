import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { MemoryBroker, type OffsetSpec, type StoredChunk } from '../../../src/memory/index.js';
import { bytes, take, text } from './helpers.js';

/** Three chunks: [a b] at t=100, [c d e] at t=200, [f] at t=300. */
function setup(): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('s');
  broker.append('s', bytes('a', 'b'), { timestamp: 100 });
  broker.append('s', bytes('c', 'd', 'e'), { timestamp: 200 });
  broker.append('s', bytes('f'), { timestamp: 300 });
  return broker;
}

function texts(chunks: StoredChunk[]): string[] {
  return chunks.flatMap((chunk) => chunk.messages.map((m) => text(m.bytes)));
}

async function consume(broker: MemoryBroker, spec: OffsetSpec, chunks: number): Promise<string[]> {
  const controller = new AbortController();
  return texts(await take(broker.consumer('s', spec, controller.signal), chunks, controller));
}

describe('consumer offset specifications', () => {
  it('first starts at the first message', async () => {
    expect(await consume(setup(), 'first', 3)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('last starts at the first message of the last chunk', async () => {
    const broker = setup();
    broker.append('s', bytes('g', 'h'));
    expect(broker.consumer('s', 'last', new AbortController().signal).startOffset).toBe(6n);
    expect(await consume(broker, 'last', 1)).toEqual(['g', 'h']);
  });

  it('last on an empty stream falls back to next', () => {
    const broker = new MemoryBroker();
    broker.createStream('empty');
    expect(broker.consumer('empty', 'last', new AbortController().signal).startOffset).toBe(0n);
  });

  it('next starts after the end at subscribe time', async () => {
    const broker = setup();
    const controller = new AbortController();
    const consumer = broker.consumer('s', 'next', controller.signal);
    expect(consumer.startOffset).toBe(6n);
    broker.append('s', bytes('g'));
    expect(texts(await take(consumer, 1, controller))).toEqual(['g']);
  });

  it('offset starts at that message, dropping the earlier ones of its chunk', async () => {
    expect(await consume(setup(), { offset: 3n }, 2)).toEqual(['d', 'e', 'f']);
  });

  it('offset beyond the end delivers from that offset once it exists', async () => {
    const broker = setup();
    const controller = new AbortController();
    const consumer = broker.consumer('s', { offset: 7n }, controller.signal);
    broker.append('s', bytes('g', 'h', 'i'));
    expect(texts(await take(consumer, 1, controller))).toEqual(['h', 'i']);
  });

  it('timestamp starts at the first chunk stamped at or after it', async () => {
    const broker = setup();
    expect(await consume(broker, { timestamp: 200 }, 2)).toEqual(['c', 'd', 'e', 'f']);
    expect(await consume(broker, { timestamp: 150 }, 2)).toEqual(['c', 'd', 'e', 'f']);
    expect(await consume(broker, { timestamp: 0 }, 3)).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
  });

  it('timestamp later than every chunk falls back to next', () => {
    const consumer = setup().consumer('s', { timestamp: 301 }, new AbortController().signal);
    expect(consumer.startOffset).toBe(6n);
  });

  it('refuses a negative offset', () => {
    expect(() => setup().consumer('s', { offset: -1n }, new AbortController().signal)).toThrow(
      ConfigError,
    );
  });
});
