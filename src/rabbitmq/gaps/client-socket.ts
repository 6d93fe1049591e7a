import type { Socket } from 'node:net';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { ClientInternalsError } from '../../common/errors.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): a `Connection` does not expose its socket, which
 * two workarounds need: reading Deliver frames raw (./consume-raw-chunks.ts) and dropping
 * a connection that stopped answering (./reconnect.ts). This is the one place that reaches
 * the private `socket` field; it fails loudly, naming the file, if a client version moves it.
 */
export function socketOf(connection: Connection): Socket {
  const socket = (connection as unknown as { socket?: unknown }).socket;
  if (socket === null || typeof socket !== 'object' || !('listeners' in socket)) {
    throw new ClientInternalsError(
      'rabbitmq-stream-js-client internals changed (a Connection has no socket field): ' +
        'src/rabbitmq/gaps/client-socket.ts needs updating for this client version',
    );
  }
  return socket as Socket;
}

/**
 * Drops `connection` at once, without waiting for the broker: a lost, frozen or half-open
 * connection would never answer Close. The client's heartbeat timer runs until `close()`
 * stops it (its first, synchronous step) and is never stopped by the socket closing, so a
 * connection dropped by destroying its socket alone keeps the process alive.
 */
export function abandon(connection: Connection): void {
  connection
    .close({ closingCode: 0, closingReason: 'abandoned', manuallyClose: true })
    .catch(() => undefined);
  socketOf(connection).destroy();
}
