import type { SinkTransaction } from './sink-database.js';

/** One message of a stream as a sink applies it. */
export interface SinkMessage<V> {
  readonly offset: bigint;
  /** The chunk's broker timestamp, epoch ms (stable on replay). */
  readonly timestamp: number;
  /** What the shape's `decode` made of the message. */
  readonly value: V;
}

/** Consecutive messages of one stream, applied in one transaction with the checkpoint. */
export interface SinkBatch<V> {
  readonly stream: string;
  /** Offsets of the first and last message of `messages`. */
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly messages: readonly SinkMessage<V>[];
}

/**
 * What a sink does with its stream (`databaseSink({ into })`): decode each message, then apply
 * a batch of them inside the transaction that also advances the checkpoint. `eachBatch`,
 * `windowOutputs`, `latestState` and `processedIds` make one.
 */
export interface SinkShape<V> {
  /**
   * The value of one message (an AMQP 1.0 message's bytes). Throws for a message that does not
   * decode: the sink stops before applying it, or dead-letters it (`onError`).
   */
  decode(bytes: Uint8Array): V;
  /** Applies `batch` with `tx`'s statements; throwing rolls the whole batch back. */
  apply(tx: SinkTransaction, batch: SinkBatch<V>): Promise<void>;
  /** Run once per start, in its own transaction, before any batch: creates the shape's tables. */
  prepare?(tx: SinkTransaction): Promise<void>;
}
