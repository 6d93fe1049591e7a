import { resolveOffsetSpec, type OffsetSpec } from './offset-spec.js';
import { toStoredChunk, type StoredChunk } from './stored-chunk.js';
import type { StreamLog } from './stream-log.js';
import { tail } from './tail.js';

/**
 * A user-level subscription, for tests that read a stream the way an application would. The
 * start is resolved once, when the consumer is created, as RabbitMQ resolves it on subscribe;
 * iterating waits for new chunks until `signal` aborts.
 */
export class MemoryConsumer implements AsyncIterable<StoredChunk> {
  /** The stream it reads. */
  readonly stream: string;
  /** First offset this consumer delivers. */
  readonly startOffset: bigint;

  constructor(
    private readonly log: StreamLog,
    spec: OffsetSpec,
    private readonly signal: AbortSignal,
  ) {
    this.stream = log.name;
    this.startOffset = resolveOffsetSpec(log, spec);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StoredChunk> {
    for await (const { chunk, writer } of tail(this.log, this.startOffset, this.signal)) {
      yield toStoredChunk(chunk, writer);
    }
  }
}
