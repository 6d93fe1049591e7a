import type { StreamLog } from './stream-log.js';

/**
 * The messages of one write to the embedded log, gathered before it is stored: a producer's
 * batch of messages under their own publishing ids (`MemoryTarget.publishEach`), which
 * RabbitMQ receives in one Publish frame and osiris stores as ONE chunk, its trailer holding
 * the producer's last id. `flush` stores what was gathered, as one chunk; the producer's
 * deduplication counts the ids gathered and not stored yet.
 */
export class PendingChunk {
  private messages: Uint8Array[] = [];
  /** The highest publishing id gathered; undefined when none is. */
  private lastId: bigint | undefined;

  constructor(
    private readonly log: StreamLog,
    /** The producer name; '' is unnamed: no deduplication, no writer in the chunk. */
    private readonly producer: string,
    private readonly now: () => number,
  ) {}

  /** The producer's highest publishing id, stored or gathered; undefined when it has none. */
  sequence(): bigint | undefined {
    return this.lastId ?? this.log.sequence(this.producer);
  }

  /** Gathers `messages`, published under `publishingId`. */
  add(publishingId: bigint, messages: readonly Uint8Array[]): void {
    for (const message of messages) this.messages.push(message);
    this.lastId = publishingId;
  }

  /** Stores what was gathered as one chunk (nothing when nothing was) and starts afresh. */
  flush(): void {
    if (this.messages.length === 0) return;
    const writer =
      this.producer === '' || this.lastId === undefined
        ? undefined
        : { producer: this.producer, publishingId: this.lastId };
    this.log.append(this.messages, this.now(), writer);
    this.messages = [];
    this.lastId = undefined;
  }
}
