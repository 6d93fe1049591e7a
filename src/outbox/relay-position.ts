import { RelayError } from '../common/errors.js';
import type { SinkTransaction } from '../database/sink-database.js';
import { cursorAfter, type OutboxCursor, type OutboxTable } from './outbox-table.js';
import type { RelayDestination, RelayStanding } from './relay-destination.js';
import {
  MAX_ROWS_PER_TRANSACTION,
  readRelayPublishingId,
  relayPublishingId,
} from './relay-publishing-id.js';

/**
 * The last row of `table` up to which `destination` holds every row, as `standing` tells: the
 * row its resume point names, then, on a super stream, on past each row its partition holds
 * already (what was in flight when the partitions' last messages were sent: about a batch),
 * asked `pageRows` rows at a time. Where a relay resumes, and what its backlog counts after.
 */
export async function relayPosition(
  tx: SinkTransaction,
  table: OutboxTable,
  destination: RelayDestination,
  standing: RelayStanding,
  pageRows: number,
): Promise<OutboxCursor | undefined> {
  let cursor = await cursorAt(tx, table, destination, standing.resumeId);
  if (!destination.superStream) return cursor;
  for (;;) {
    const rows = await table.keysAfter(tx, cursor, pageRows);
    for (const row of rows) {
      const next = cursorAfter(cursor, row);
      if (
        next.index >= MAX_ROWS_PER_TRANSACTION ||
        !destination.holds(standing, row.key, relayPublishingId(next))
      ) {
        return cursor;
      }
      cursor = next;
    }
    if (rows.length < pageRows) return cursor;
  }
}

/**
 * The cursor at the row publishing id `resumeId` names, undefined for 0 (nothing published).
 * A row the table no longer has is a permanent `RelayError` at stage 'resume', but on a super
 * stream when the table holds no row of its transaction or an older one: there the resume
 * point can fall behind what an earlier `prune()` deleted (two relays of one name at once,
 * whose batches were cut apart: a later message of one records less than an earlier of the
 * other), and every row deleted was on the super stream, so the relay resumes from the
 * table's first row.
 */
async function cursorAt(
  tx: SinkTransaction,
  table: OutboxTable,
  destination: RelayDestination,
  resumeId: bigint,
): Promise<OutboxCursor | undefined> {
  const place = readRelayPublishingId(resumeId);
  if (place === undefined) return undefined;
  const rowId = await table.rowAt(tx, place);
  if (rowId !== undefined) return { ...place, rowId };
  if (destination.superStream && !(await table.holdsUpTo(tx, place.txid))) return undefined;
  throw new RelayError(
    destination.relay,
    table.name,
    destination.name,
    undefined,
    'resume',
    false,
    new Error(
      (destination.superStream
        ? "the row the super stream's partitions record as confirmed"
        : "the stream's last row") +
        ` (row ${place.index} of transaction ${place.txid}, publishing id ${resumeId}) is ` +
        'not in the table: rows of it or after it were deleted, or the table is not the one ' +
        'this relay published from; nothing was published',
    ),
  );
}
