import type { SourceChunk } from './ports.js';

/**
 * Message `index` of `chunk` as a copy: a value kept beyond the chunk (a decoded result, a
 * dead letter) must not pin or alias the broker's buffer.
 */
export function messageAt(chunk: SourceChunk, index: number): Uint8Array {
  // Not `bytes.slice`: on RabbitMQ the bytes are a Deliver frame's Buffer, whose `slice` is a
  // view that would keep the whole frame alive.
  return Uint8Array.from(chunk.bytes.subarray(chunk.starts[index], chunk.ends[index]));
}
