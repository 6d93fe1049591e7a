import type { Source, SourceChunk } from '../core/ports.js';
import type { StreamLog } from './stream-log.js';
import { tail } from './tail.js';

/** The engine's view of an embedded stream: one `SourceChunk` per stored chunk, as RabbitMQ delivers them. */
export class MemorySource implements Source {
  readonly stream: string;

  constructor(private readonly log: StreamLog) {
    this.stream = log.name;
  }

  async *read(from: bigint, signal: AbortSignal): AsyncIterable<SourceChunk> {
    for await (const { chunk } of tail(this.log, from, signal)) yield chunk;
  }

  async endOffset(): Promise<bigint> {
    this.log.assertExists();
    return this.log.nextOffset;
  }
}
