import type { ReadStart, Source, SourceChunk } from '../ports/ports.js';
import { resolveReadStart } from '../ports/read-start.js';
import type { StreamLog } from './stream-log.js';
import { tail } from './tail.js';
import { asPromise } from '../common/as-promise.js';

/**
 * The engine's view of an embedded stream: one `SourceChunk` per stored chunk, as RabbitMQ
 * delivers them. `SingleActiveSource` reads it as one member of a group, with the same offsets.
 */
export class MemorySource implements Source {
  readonly stream: string;

  constructor(
    /** The embedded stream it reads, for subclasses (`SingleActiveSource`). */
    protected readonly log: StreamLog,
  ) {
    this.stream = log.name;
  }

  /**
   * 'first' is the first offset still stored; an offset that retention removed (see
   * `MemoryBroker.truncate`) fails with `RetentionGapError`, as the RabbitMQ adapter does.
   */
  async *read(from: ReadStart, signal: AbortSignal): AsyncIterable<SourceChunk> {
    const offset = await resolveReadStart(from);
    const start = offset === 'first' ? this.log.firstOffset : offset;
    for await (const { chunk } of tail(this.log, start, signal)) yield chunk;
  }

  endOffset(): Promise<bigint> {
    return asPromise(() => {
      this.log.assertExists();
      return this.log.endOffset;
    });
  }

  timestampAt(offset: bigint): Promise<number | undefined> {
    return asPromise(() => {
      this.log.assertExists();
      const chunk = this.log.chunks[this.log.chunkIndexAt(offset)];
      return chunk !== undefined && chunk.firstOffset <= offset ? chunk.timestamp : undefined;
    });
  }

  storedOffset(reference: string): Promise<bigint | undefined> {
    return asPromise(() => {
      this.log.assertExists();
      return this.log.storedOffset(reference);
    });
  }

  storeOffset(reference: string, offset: bigint): Promise<void> {
    return asPromise(() => {
      this.log.assertExists();
      this.log.storeOffset(reference, offset);
    });
  }
}
