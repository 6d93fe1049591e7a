import type { SourceChunk } from '../ports/ports.js';

/** Which named producer wrote a chunk and under which publishing id (the chunk trailer). */
export interface ChunkWriter {
  readonly producer: string;
  readonly publishingId: bigint;
}

/** A chunk as the embedded log keeps it: the port's shape plus its writer, if named. */
export interface LogChunk extends SourceChunk {
  readonly writer: ChunkWriter | undefined;
}

/** One message, for tests and user consumers that want objects rather than slices. */
export interface StoredMessage {
  readonly offset: bigint;
  readonly chunkTimestamp: number;
  readonly bytes: Uint8Array;
}

/** One chunk as a list of messages. `writer` is embedded-broker inspection only: RabbitMQ does not deliver it. */
export interface StoredChunk {
  readonly firstOffset: bigint;
  readonly timestamp: number;
  readonly messages: readonly StoredMessage[];
  readonly writer: ChunkWriter | undefined;
}

/** Copies each message, so a caller that mutates what it got cannot change the log. */
export function toStoredChunk(chunk: SourceChunk, writer: ChunkWriter | undefined): StoredChunk {
  const messages: StoredMessage[] = [];
  for (let i = 0; i < chunk.count; i++) {
    messages.push({
      offset: chunk.firstOffset + BigInt(i),
      chunkTimestamp: chunk.timestamp,
      bytes: chunk.bytes.slice(chunk.starts[i], chunk.ends[i]),
    });
  }
  return { firstOffset: chunk.firstOffset, timestamp: chunk.timestamp, messages, writer };
}
