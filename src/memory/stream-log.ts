import { packChunk } from '../ports/pack-chunk.js';
import { StreamNotFoundError } from './errors.js';
import type { ChunkWriter, LogChunk } from './stored-chunk.js';
import { Wakeups } from './wakeups.js';

/**
 * One stream of the embedded broker: an append-only list of chunks with offsets from 0, and
 * the deduplication table of its named producers (RabbitMQ keeps that table per stream and
 * rebuilds it from chunk trailers, so it lives and dies with the log).
 */
export class StreamLog {
  private readonly chunkList: LogChunk[] = [];
  /** Highest publishing id stored per producer name (osiris "sequence" tracking). */
  private readonly sequences = new Map<string, bigint>();
  /**
   * Where each producer's latest write begins: the embedded broker's result hint (a RabbitMQ
   * target keeps one with offset tracking, see src/rabbitmq/write/result-hint.ts). The log
   * knows it exactly, and it takes no offset; like the producer table, retention leaves it.
   */
  private readonly lastWrites = new Map<string, bigint>();
  /** Offsets stored by reference (RabbitMQ's server-side offset tracking). */
  private readonly references = new Map<string, bigint>();
  /** Readers parked until the log changes; woken all at once, so none polls. */
  private readonly wakeups = new Wakeups();
  private next = 0n;
  private messagesEnd = 0n;
  private deleted = false;

  constructor(readonly name: string) {}

  get chunks(): readonly LogChunk[] {
    return this.chunkList;
  }

  /** Offset of the first message still stored (`nextOffset` once retention removed everything). */
  get firstOffset(): bigint {
    return this.chunkList[0]?.firstOffset ?? this.next;
  }

  /** Offset the next chunk will get (a message's, or a tracking chunk's). */
  get nextOffset(): bigint {
    return this.next;
  }

  /** One past the last message (0 when none): tracking chunks after it are never delivered. */
  get endOffset(): bigint {
    return this.messagesEnd;
  }

  assertExists(): void {
    if (this.deleted) throw new StreamNotFoundError(this.name);
  }

  get exists(): boolean {
    return !this.deleted;
  }

  /** Writes the messages as one chunk and wakes every waiting reader. */
  append(messages: readonly Uint8Array[], timestamp: number, writer?: ChunkWriter): LogChunk {
    // Copied in: a caller reusing its buffers must not rewrite history.
    const chunk: LogChunk = { ...packChunk(this.next, timestamp, messages), writer };
    this.chunkList.push(chunk);
    this.next += BigInt(messages.length);
    this.messagesEnd = this.next;
    if (writer !== undefined) {
      this.sequences.set(writer.producer, writer.publishingId);
      this.lastWrites.set(writer.producer, chunk.firstOffset);
    }
    this.wake();
    return chunk;
  }

  /**
   * Retention: removes every chunk all of whose offsets are below `beforeOffset`, as RabbitMQ
   * removes whole segments from the head (a chunk holding `beforeOffset` stays whole).
   * Offsets are never reused, and the producer table stays: osiris carries it over in the
   * next segment's header, so deduplication survives retention.
   */
  truncate(beforeOffset: bigint): void {
    const kept = this.chunkIndexAt(beforeOffset);
    this.chunkList.splice(0, kept);
  }

  /** Highest publishing id stored for `producer`, undefined when the name never wrote here. */
  sequence(producer: string): bigint | undefined {
    return this.sequences.get(producer);
  }

  /** The chunk of `producer`'s latest write, undefined when it never wrote or retention removed it. */
  lastWrite(producer: string): LogChunk | undefined {
    const offset = this.lastWrites.get(producer);
    if (offset === undefined) return undefined;
    const chunk = this.chunkList[this.chunkIndexAt(offset)];
    return chunk?.firstOffset === offset ? chunk : undefined;
  }

  /** The offset last stored under `reference`, undefined when none was. */
  storedOffset(reference: string): bigint | undefined {
    return this.references.get(reference);
  }

  /**
   * Stores `offset` under `reference`, replacing what was there, as RabbitMQ's StoreOffset
   * does: it writes a tracking chunk, which takes an offset but is never delivered, so the
   * stream's offsets have a gap there (no chunk is kept for it here).
   */
  storeOffset(reference: string, offset: bigint): void {
    this.references.set(reference, offset);
    this.next += 1n;
  }

  /** Index of the first chunk that holds `offset` or anything after it (chunks.length if none yet). */
  chunkIndexAt(offset: bigint): number {
    let low = 0;
    let high = this.chunkList.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const chunk = this.chunkList[mid] as LogChunk;
      if (chunk.firstOffset + BigInt(chunk.count) <= offset) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /** Resolves on the next append or delete, or when `signal` aborts. */
  changed(signal: AbortSignal): Promise<void> {
    return this.wakeups.next(signal);
  }

  delete(): void {
    this.deleted = true;
    this.wake();
  }

  private wake(): void {
    this.wakeups.wakeAll();
  }
}
