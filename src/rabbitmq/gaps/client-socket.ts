import type { Socket } from 'node:net';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { ClientInternalsError } from '../../common/errors.js';
import { FrameAssembler } from '../socket-frames.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): a `Connection` does not expose its socket, which
 * the workarounds need: reading frames raw before the client's decoder (`routeFrames`, for
 * Deliver frames in ./consume-raw-chunks.ts and confirms in ./publish-confirms.ts), writing
 * frames ourselves (./raw-publish.ts, ./grant-credit.ts) and dropping a connection that
 * stopped answering (./reconnect.ts). This is the one place that reaches the private
 * `socket` field; it fails loudly, naming the file, if a client version moves it.
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

/** Receives one whole frame, without its size prefix (starting at the key). */
export type FrameHandler = (frame: Buffer) => void;

const EMPTY = Buffer.alloc(0);
const SIZE_PREFIX = 4;

/**
 * Puts a frame router between `connection`'s socket and the client's decoder: a frame whose
 * key is in `routes` goes to its handler untouched (a view of the socket's read; a frame that
 * spans reads is copied once, see ../socket-frames.ts), every other frame goes on to the
 * client's own listener as before, in order. Whatever throws while a socket read is handled
 * (the client's decoder on a frame it does not know, for one) goes to `onError` instead of
 * becoming an uncaught exception; the connection is then unusable.
 *
 * It relies on the client's single 'data' listener, checked loudly.
 */
export function routeFrames(
  connection: Connection,
  routes: ReadonlyMap<number, FrameHandler>,
  onError: (error: unknown) => void,
): void {
  const net = socketOf(connection);
  const listeners = net.listeners('data');
  const clientListener = listeners[0];
  if (listeners.length !== 1 || typeof clientListener !== 'function') {
    throw new ClientInternalsError(
      'rabbitmq-stream-js-client internals changed (the socket has ' +
        `${listeners.length} 'data' listeners, not 1): src/rabbitmq/gaps/client-socket.ts ` +
        'needs updating for this client version',
    );
  }
  const toClient = clientListener as (data: Buffer) => void;
  net.removeListener('data', toClient);

  let forwarded = false;
  const frames = new FrameAssembler((frame) => {
    const key = frame.length >= SIZE_PREFIX + 2 ? frame.readUInt16BE(SIZE_PREFIX) : undefined;
    const route = key === undefined ? undefined : routes.get(key);
    if (route !== undefined) {
      route(frame.subarray(SIZE_PREFIX));
    } else {
      toClient(frame);
      forwarded = true;
    }
  });
  const route = (data: Buffer): void => {
    forwarded = false;
    frames.push(data);
    // The client's listener also feeds its heartbeat idle detection, which closes a
    // connection that neither sent nor received for two intervals: a connection that only
    // receives routed frames must still count as receiving.
    // The push above runs the listener that sets it, which TypeScript cannot see.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
    if (!forwarded) toClient(EMPTY);
  };
  net.on('data', (data: Buffer) => {
    try {
      route(data);
    } catch (error) {
      onError(error);
    }
  });
}
