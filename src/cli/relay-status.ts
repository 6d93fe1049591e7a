import type { SinkDatabase } from '../database/sink-database.js';
import { OutboxTable } from '../outbox/outbox-table.js';
import { DEFAULT_MAX_BATCH_ROWS } from '../outbox/outbox-relay.js';
import { readRelayBacklog, type RelayBacklog } from '../outbox/relay-backlog.js';
import { RelayDestination, type RelayBroker } from '../outbox/relay-destination.js';

/** Where an outbox relay stands on its stream (or super stream), and what it has still to publish. */
export interface RelayStatus extends RelayBacklog {
  /** The relay's name: its producer's on the stream (on each partition). */
  readonly relay: string;
  /** The outbox table it publishes from. */
  readonly table: string;
}

/**
 * Where the outbox relay named `relay` stands on `to`, as its `backlog()` reads it, without
 * creating, declaring or changing anything: the producer's last publishing id on the stream
 * (on a super stream, each partition's and the `sw-relay-through` of its last message), the
 * outbox row where the relay would resume in `table` (default 'stream_windows_outbox'), and
 * the committed rows after it (with the event-time age of the oldest), read from `database`.
 * The broker is asked first: while the relay runs, the rows shown behind may be more than they
 * are by then, never fewer.
 */
export async function relayStatus(
  database: SinkDatabase,
  broker: RelayBroker,
  relay: string,
  to: { readonly stream: string } | { readonly superStream: string },
  table?: string,
): Promise<RelayStatus> {
  const outbox = new OutboxTable(table);
  const destination = new RelayDestination(broker, relay, to);
  try {
    const standing = await destination.standing(false);
    const backlog = await database.transaction((tx) =>
      readRelayBacklog(tx, outbox, destination, standing, DEFAULT_MAX_BATCH_ROWS),
    );
    return { relay, table: outbox.name, ...backlog };
  } finally {
    await destination.close();
  }
}
