import type { SourceChunk } from './ports.js';

/**
 * Message `index` of `chunk` as a copy: a value kept beyond the chunk (a decoded result, a
 * dead letter) must not pin or alias the broker's buffer.
 */
export function messageAt(chunk: SourceChunk, index: number): Uint8Array {
  return chunk.bytes.slice(chunk.starts[index], chunk.ends[index]);
}
