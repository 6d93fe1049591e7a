import type { SourceChunk } from './ports.js';

/** Messages [`start`, `end`) of `chunk`, a view of its bytes: nothing is copied. */
export function sliceOf(chunk: SourceChunk, start: number, end: number): SourceChunk {
  return {
    firstOffset: chunk.firstOffset + BigInt(start),
    timestamp: chunk.timestamp,
    count: end - start,
    bytes: chunk.bytes,
    starts: chunk.starts.subarray(start, end),
    ends: chunk.ends.subarray(start, end),
  };
}
