import type { SourceChunk } from './ports.js';

/**
 * Message `index` of `chunk` as a copy: a value kept beyond the chunk (a decoded result, a
 * dead letter) must not pin or alias the broker's buffer.
 */
export function messageAt(chunk: SourceChunk, index: number): Uint8Array {
  // Not `bytes.slice`: on RabbitMQ the bytes are a Deliver frame's Buffer, whose `slice` is a
  // view that would keep the whole frame alive. A copy by `set` (one memcpy), not
  // `Uint8Array.from`, which goes element by element.
  const start = chunk.starts[index] as number;
  const copy = new Uint8Array((chunk.ends[index] as number) - start);
  copy.set(chunk.bytes.subarray(start, chunk.ends[index]));
  return copy;
}
