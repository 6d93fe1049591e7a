import { randomUUID } from 'node:crypto';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import {
  Connection,
  type ConnectionListenersParams,
} from 'rabbitmq-stream-js-client/dist/connection.js';
import {
  AccessRefusedError,
  BrokerUnavailableError,
  ClientInternalsError,
  StreamWindowsError,
  describe,
} from '../../common/errors.js';
import { OK, codeName } from '../../common/stream-protocol.js';
import { silentLogger } from '../../common/logger.js';
import { FrameAssembler } from '../socket-frames.js';
import { abandon, socketOf } from './client-socket.js';
import { checkHandshakeStrings, writeStringsAsUtf8 } from './utf8-strings.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): `Connection.connect()` fails badly whenever the
 * broker refuses:
 *   - a wrong user or password: `auth()` throws `Unable Authenticate -> 8` inside an async
 *     socket listener, an unhandled rejection that ends a Node process by default, and the
 *     connect promise never settles;
 *   - an unknown virtual host: the client decodes the refused Open response as a successful
 *     one and reads past its end, a `RangeError [ERR_BUFFER_OUT_OF_BOUNDS]` thrown from the
 *     socket's 'data' listener: an uncaught exception;
 *   - a socket closed during the handshake leaves the promise pending too, and there is no
 *     timeout; an attempt given up on keeps going (and its heartbeat timer would run on).
 *
 * WORKAROUND: during the handshake, read the broker's frames before the client does: a
 * refusal of PeerProperties, SaslHandshake, SaslAuthenticate or Open is never passed on;
 * the connection is dropped and the attempt fails with `AccessRefusedError` naming the code.
 * A close during the handshake or a timeout drops the attempt as well and fails with a
 * retriable `BrokerUnavailableError`. Once the handshake is done, the client's own 'data'
 * listener is put back unchanged. Relies on the socket field (./client-socket.ts) and the
 * client's single 'data' listener, checked loudly. test/integration/rabbitmq-handshake.test.ts
 * shows the stock client crashing a child process where ours rejects.
 */

/** Handshake responses whose refusal the client mishandles, and what each one asked. */
const HANDSHAKE_RESPONSES: ReadonlyMap<number, (params: ClientParams) => string> = new Map([
  [0x8011, () => 'peer properties'],
  [0x8012, () => 'SASL mechanisms'],
  [0x8013, (params: ClientParams) => `user '${params.username}'`],
  [0x8015, (params: ClientParams) => `virtual host '${params.vhost}'`],
]);
/** key uint16 | version uint16 | correlation id uint32 | response code uint16, after the size. */
const CODE_AT = 4 + 2 + 2 + 4;

/**
 * Opens a client connection and completes its handshake within `timeoutMs`. `listeners`
 * hear only about the connection once it is open: a close during the handshake is this
 * function's failure. `signal` gives the attempt up.
 */
export async function openConnection(
  params: ClientParams,
  timeoutMs: number,
  listeners: ConnectionListenersParams = {},
  signal?: AbortSignal,
): Promise<Connection> {
  writeStringsAsUtf8(); // before the handshake's first string
  checkHandshakeStrings(params);
  const where = `${params.hostname}:${params.port}`;
  let open = false;
  let fail: (error: Error) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  const connection = Connection.create(
    {
      ...params,
      connectionId: randomUUID(),
      listeners: {
        ...listeners,
        connection_closed: (hadError) => {
          if (open) listeners.connection_closed?.(hadError);
          else fail(new Error('the connection closed during the handshake'));
        },
      },
    },
    // We report what matters as typed errors naming stream and offset; the client's own lines
    // would only repeat them as noise.
    silentLogger,
  );
  const starting = connection.start();
  const timer = setTimeout(
    () => fail(new Error(`the handshake was not done within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onAbort = (): void => fail(new Error('the connection was closed while connecting'));
  signal?.addEventListener('abort', onAbort, { once: true });
  if (signal?.aborted === true) onAbort();
  let restoreClientListener: () => void;
  try {
    // Nagle's algorithm off (Node's default is on; the client never turns it off): a small
    // frame written while the previous one is unacknowledged waits for the broker's delayed
    // ACK, about 40 ms. The handshake's Tune reply and Open go out back to back, so every
    // connection took ~50 ms to open (measured 48-63 ms, 5-17 ms without), and credit
    // frames, which gate the next chunk, crawled (34k msg/s at credit 4 against 580k).
    socketOf(connection).setNoDelay(true);
    restoreClientListener = screenHandshake(connection, (code, key) => {
      const asked = HANDSHAKE_RESPONSES.get(key)?.(params) ?? `request 0x${key.toString(16)}`;
      fail(new AccessRefusedError(where, code, `${asked}: ${codeName(code)} (code ${code})`));
    });
    await Promise.race([starting, failed]);
  } catch (error) {
    abandon(connection);
    if (error instanceof StreamWindowsError) throw error; // a refusal, or internals changed
    throw new BrokerUnavailableError(`cannot connect to RabbitMQ at ${where}: ${describe(error)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
  restoreClientListener();
  open = true;
  return connection;
}

/**
 * Puts a filter in front of the client's 'data' listener that withholds refused handshake
 * responses (reporting them to `onRefused`); returns the function that removes it again.
 */
function screenHandshake(
  connection: Connection,
  onRefused: (code: number, key: number) => void,
): () => void {
  const socket = socketOf(connection);
  const listeners = socket.listeners('data');
  const clientListener = listeners[0];
  if (listeners.length !== 1 || typeof clientListener !== 'function') {
    throw new ClientInternalsError(
      `rabbitmq-stream-js-client internals changed (the socket has ${listeners.length} 'data' ` +
        `listeners, not 1): src/rabbitmq/gaps/handshake.ts needs updating for this client version`,
    );
  }
  const toClient = clientListener as (data: Buffer) => void;
  let refused = false;
  const frames = new FrameAssembler((frame) => {
    if (refused) return;
    const key = frame.length >= CODE_AT + 2 ? frame.readUInt16BE(4) : 0;
    const code = HANDSHAKE_RESPONSES.has(key) ? frame.readUInt16BE(CODE_AT) : OK;
    if (code === OK) {
      toClient(frame);
      return;
    }
    refused = true;
    onRefused(code, key);
  });
  const screen = (data: Buffer): void => frames.push(data);
  socket.removeListener('data', toClient);
  socket.on('data', screen);
  return () => {
    socket.removeListener('data', screen);
    socket.on('data', toClient);
    // A frame begun in the last read goes on to the client, which assembles frames itself.
    const rest = frames.takeRest();
    if (rest.length > 0) toClient(rest);
  };
}
