import type { SourceChunk } from '../ports/ports.js';

/** Which named producer wrote a chunk and under which publishing id (the chunk trailer). */
export interface ChunkWriter {
  /** The producer name. */
  readonly producer: string;
  /** The publishing id the chunk's write was published under. */
  readonly publishingId: bigint;
}

/** A chunk as the embedded log keeps it: the port's shape plus its writer, if named. */
export interface LogChunk extends SourceChunk {
  readonly writer: ChunkWriter | undefined;
}

/** One message, for tests and user consumers that want objects rather than slices. */
export interface StoredMessage {
  /** The message's offset in its stream. */
  readonly offset: bigint;
  /** The broker timestamp of its chunk, epoch ms. */
  readonly chunkTimestamp: number;
  /** The AMQP 1.0 bare message, a copy of the stored bytes. */
  readonly bytes: Uint8Array;
}

/** One chunk as a list of messages. `writer` is embedded-broker inspection only: RabbitMQ does not deliver it. */
export interface StoredChunk {
  /** The offset of its first message. */
  readonly firstOffset: bigint;
  /** The broker timestamp of the chunk, epoch ms. */
  readonly timestamp: number;
  /** Its messages, in offset order. */
  readonly messages: readonly StoredMessage[];
  /** The named producer that wrote it, and under which publishing id; undefined if unnamed. */
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
