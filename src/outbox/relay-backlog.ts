import type { SinkTransaction } from '../database/sink-database.js';
import type { OutboxCursor, OutboxTable } from './outbox-table.js';
import type { RelayDestination, RelayPartition, RelayStanding } from './relay-destination.js';
import { relayPosition } from './relay-position.js';

/** Where a relay stands, read now from the broker and the database. */
export interface RelayBacklog {
  /** The stream (or super stream) the relay publishes to. */
  readonly stream: string;
  /** The producer's last publishing id on the stream, the highest of the partitions' on a super stream (0: nothing published). */
  readonly lastPublishingId: bigint;
  /** On a super stream, each partition's standing (see `RelayPartition`). */
  readonly partitions?: readonly RelayPartition[];
  /** The last row up to which the stream (or every partition) holds all rows; undefined when none. */
  readonly position: OutboxCursor | undefined;
  /** Committed rows not on the stream yet. */
  readonly rows: bigint;
  /** The event-time age of the oldest of them, ms; undefined when there is none. */
  readonly oldestAgeMs: number | undefined;
}

/**
 * Where the relay publishing from `table` to `destination` stands when the broker answers
 * `standing`: its position (see `relayPosition`, walked `pageRows` rows at a time), and the
 * committed rows after it with the event-time age of the oldest, read in `tx`. Asked after the
 * standing, while the relay runs, it may count rows published meanwhile: more than the backlog
 * is by then, never less.
 */
export async function readRelayBacklog(
  tx: SinkTransaction,
  table: OutboxTable,
  destination: RelayDestination,
  standing: RelayStanding,
  pageRows: number,
): Promise<RelayBacklog> {
  const position = await relayPosition(tx, table, destination, standing, pageRows);
  const { rows, oldestAgeMs } = await table.backlog(tx, position);
  return { ...destination.described(standing), position, rows, oldestAgeMs };
}
