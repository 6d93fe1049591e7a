import type { SinkTransaction } from '../database/sink-database.js';

/** One message of a stream as a sink applies it. */
export interface SinkMessage<V> {
  /** The message's offset in its stream. */
  readonly offset: bigint;
  /** The chunk's broker timestamp, epoch ms (stable on replay). */
  readonly timestamp: number;
  /** What the shape's `decode` made of the message. */
  readonly value: V;
}

/** Consecutive messages of one stream, applied in one transaction with the checkpoint. */
export interface SinkBatch<V> {
  /** The stream the messages come from (a partition's, for a super stream). */
  readonly stream: string;
  /** The offset of the first message of `messages`. */
  readonly firstOffset: bigint;
  /** The offset of the last message of `messages`. */
  readonly lastOffset: bigint;
  /** The messages, in offset order. */
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
  /**
   * The messages are a job's results (`decodeResult`): a batch then ends only where every step
   * it holds messages of is whole, so no transaction commits part of a step written in several
   * messages. Set by `windowOutputs`, `latestState`, and `eachBatch` and `processedIds` with
   * `decode: 'result'`.
   */
  readonly readsResults?: boolean;
}
