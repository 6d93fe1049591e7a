import type { SourceChunk } from './ports.js';

/**
 * Copies `messages` into one backing buffer, as a broker delivers a chunk: for the embedded
 * broker's log, and for tests and benchmarks that feed a StepProcessor directly.
 */
export function packChunk(
  firstOffset: bigint,
  timestamp: number,
  messages: readonly Uint8Array[],
): SourceChunk {
  let length = 0;
  for (const message of messages) length += message.length;
  const bytes = new Uint8Array(length);
  const starts = new Uint32Array(messages.length);
  const ends = new Uint32Array(messages.length);
  let position = 0;
  messages.forEach((message, i) => {
    bytes.set(message, position);
    starts[i] = position;
    position += message.length;
    ends[i] = position;
  });
  return { firstOffset, timestamp, count: messages.length, bytes, starts, ends };
}
