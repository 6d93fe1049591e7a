import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { ClientInternalsError } from '../../common/errors.js';
import { DELIVER_KEY } from '../read/deliver-chunk.js';
import { FrameAssembler } from '../socket-frames.js';
import { socketOf } from './client-socket.js';
import {
  CONSUMER_UPDATE_KEY,
  parseConsumerUpdate,
  type ConsumerUpdate,
} from './consumer-update.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): the stock consumer decodes every Deliver frame
 * itself, and that decoder
 *   - keeps only the LAST `data` section of a message (our results carry one per key),
 *   - numbers the records of a sub-entry batch 0..n-1 instead of their real offsets,
 *   - decodes every section into objects and re-concatenates partial frames on every
 *     socket read (about half the rate of a copy-free reader, DESIGN.md §5),
 *   - throws decode errors out of the socket listener (uncaught exceptions), and its
 *     consumer stops for good when a handler throws.
 * There is no option to get the raw chunk.
 *
 * WORKAROUND: keep the client's `Connection` for what it does well (handshake,
 * authentication, tuning, heartbeats, request/response correlation) and put a frame router
 * between its socket and its decoder: Deliver frames go to `onDeliver` untouched (views of
 * the socket's reads; a frame that spans reads is copied once, see ../socket-frames.ts),
 * every other frame goes on to the client's own listener as before, except ConsumerUpdate
 * frames, which take the same way out (./consumer-update.ts) so that they are seen in order
 * with the chunks. The subscription and credit are then ours (see ../read/source-subscription.ts);
 * the client's consumer is never used.
 *
 * It relies on two private details of the client: the connection's `socket` field
 * (./client-socket.ts) and its single 'data' listener; both are checked, loudly.
 * test/integration/rabbitmq-source.test.ts shows the gaps on the real broker; when
 * the stock consumer passes those checks, this file can go.
 */

/** Receives one whole Deliver frame, without its size prefix (starting at the key). */
export type DeliverHandler = (frame: Buffer) => void;

/** Where the frames the client must not see go. */
export interface ConsumerFrameHandlers {
  readonly deliver: DeliverHandler;
  readonly consumerUpdate: (update: ConsumerUpdate) => void;
}

const EMPTY = Buffer.alloc(0);
const SIZE_PREFIX = 4;

/**
 * Routes the Deliver and ConsumerUpdate frames of `connection` (a connected, handshaken
 * client connection used for nothing else) to `handlers`. Whatever throws while a socket read is handled
 * (the client's decoder on a frame it does not know, for one) goes to `onError` instead of
 * becoming an uncaught exception; the connection is then unusable.
 */
export function routeDeliverFrames(
  connection: Connection,
  handlers: ConsumerFrameHandlers,
  onError: (error: unknown) => void,
): void {
  const net = socketOf(connection);
  const listeners = net.listeners('data');
  const clientListener = listeners[0];
  if (listeners.length !== 1 || typeof clientListener !== 'function') {
    throw new ClientInternalsError(
      clientChanged(`the socket has ${listeners.length} 'data' listeners, not 1`),
    );
  }
  const toClient = clientListener as (data: Buffer) => void;
  net.removeListener('data', toClient);

  let forwarded = false;
  const frames = new FrameAssembler((frame) => {
    const key = frame.length >= SIZE_PREFIX + 2 ? frame.readUInt16BE(SIZE_PREFIX) : undefined;
    if (key === DELIVER_KEY) {
      handlers.deliver(frame.subarray(SIZE_PREFIX));
    } else if (key === CONSUMER_UPDATE_KEY) {
      handlers.consumerUpdate(parseConsumerUpdate(frame.subarray(SIZE_PREFIX)));
    } else {
      toClient(frame);
      forwarded = true;
    }
  });
  const route = (data: Buffer): void => {
    forwarded = false;
    frames.push(data);
    // The client's listener also feeds its heartbeat idle detection, which closes a
    // connection that neither sent nor received for two intervals: a consumer that only
    // receives Deliver frames must still count as receiving.
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

function clientChanged(what: string): string {
  return (
    `rabbitmq-stream-js-client internals changed (${what}): the raw Deliver workaround in ` +
    `src/rabbitmq/gaps/consume-raw-chunks.ts needs updating for this client version`
  );
}
