import type { SourceChunk } from '../../../src/ports/ports.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function bytes(...texts: string[]): Uint8Array[] {
  return texts.map((text) => encoder.encode(text));
}

export function text(message: Uint8Array): string {
  return decoder.decode(message);
}

/** The messages of a port chunk as text, with their offsets. */
export function chunkTexts(chunk: SourceChunk): [bigint, string][] {
  const result: [bigint, string][] = [];
  for (let i = 0; i < chunk.count; i++) {
    result.push([
      chunk.firstOffset + BigInt(i),
      text(chunk.bytes.subarray(chunk.starts[i], chunk.ends[i])),
    ]);
  }
  return result;
}

/** Takes `n` items, then aborts `controller` so the reader ends; fails the test instead of hanging. */
export async function take<T>(
  iterable: AsyncIterable<T>,
  n: number,
  controller: AbortController,
): Promise<T[]> {
  const items: T[] = [];
  const timer = setTimeout(() => controller.abort(), 2_000);
  try {
    for await (const item of iterable) {
      items.push(item);
      if (items.length === n) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return items;
}

/** Lets pending promise callbacks and timers run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** The one element of `items`; fails the test when there is not exactly one. */
export function single<T>(items: readonly T[]): T {
  const [item] = items;
  if (items.length !== 1 || item === undefined)
    throw new Error(`expected one item, got ${items.length}`);
  return item;
}
