/**
 * The publishing ids of an outbox relay. The relay publishes committed rows in the order of
 * their transaction id (xid8), then their row id; row `index` of transaction `txid` (counted
 * from 0 in row id order) is published under `txid * 2^20 + index`. So the ids rise strictly
 * in the order the rows are published, follow from the rows alone (a crash or a second relay
 * computes the same ids), and the producer's last id says which row the stream holds last:
 * where the relay resumes.
 */

/** Low bits of a publishing id that number the rows of one transaction. */
const INDEX_BITS = 20n;

/** Rows of one transaction a relay can publish (2^20): a transaction with more stops it with a `RelayError`. */
export const MAX_ROWS_PER_TRANSACTION = 2 ** 20;

/**
 * Highest transaction id a publishing id can carry (2^42 − 1): the id stays below 2^62, where a
 * job's result ids begin, so that `readResult` reads it as a result's `sw-last-offset` and finds
 * a super stream partition's last message by it (./outbox-message.ts).
 */
export const MAX_RELAY_TXID = 2n ** 42n - 1n;

/** A row's place in the relay's order: its transaction, and its index among that transaction's rows. */
export interface RelayPosition {
  /** The transaction id (xid8) the row was inserted in. */
  readonly txid: bigint;
  /** Its index among the transaction's rows, in row id order, from 0. */
  readonly index: number;
}

/** The publishing id of row `index` of transaction `txid`. */
export function relayPublishingId(position: RelayPosition): bigint {
  return (position.txid << INDEX_BITS) | BigInt(position.index);
}

/** The row a relay's publishing id names; undefined for 0 (the producer published nothing). */
export function readRelayPublishingId(publishingId: bigint): RelayPosition | undefined {
  if (publishingId === 0n) return undefined;
  return {
    txid: publishingId >> INDEX_BITS,
    index: Number(publishingId & ((1n << INDEX_BITS) - 1n)),
  };
}
