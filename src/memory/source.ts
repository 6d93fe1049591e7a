import type { Source, SourceChunk } from '../core/ports.js';
import type { StreamLog } from './stream-log.js';
import { tail } from './tail.js';

/** The engine's view of an embedded stream: one `SourceChunk` per stored chunk, as RabbitMQ delivers them. */
export class MemorySource implements Source {
  readonly stream: string;

  constructor(private readonly log: StreamLog) {
    this.stream = log.name;
  }

  /** The embedded broker has no retention: 'first' is offset 0. */
  async *read(from: bigint | 'first', signal: AbortSignal): AsyncIterable<SourceChunk> {
    for await (const { chunk } of tail(this.log, from === 'first' ? 0n : from, signal)) yield chunk;
  }

  async endOffset(): Promise<bigint> {
    this.log.assertExists();
    return this.log.nextOffset;
  }
}
