import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { DELIVER_KEY } from '../read/deliver-chunk.js';
import { routeFrames, type FrameHandler } from './client-socket.js';
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
 * It relies on two private details of the client: the connection's `socket` field and its
 * single 'data' listener (both checked, loudly, in ./client-socket.ts `routeFrames`).
 * test/integration/rabbitmq-source.test.ts shows the gaps on the real broker; when
 * the stock consumer passes those checks, this file can go.
 */

/** Receives one whole Deliver frame, without its size prefix (starting at the key). */
export type DeliverHandler = FrameHandler;

/** Where the frames the client must not see go. */
export interface ConsumerFrameHandlers {
  readonly deliver: DeliverHandler;
  readonly consumerUpdate: (update: ConsumerUpdate) => void;
}

/**
 * Routes the Deliver and ConsumerUpdate frames of `connection` (a connected, handshaken
 * client connection used for nothing else) to `handlers`, the rest to the client; what
 * throws goes to `onError` (see `routeFrames`).
 */
export function routeDeliverFrames(
  connection: Connection,
  handlers: ConsumerFrameHandlers,
  onError: (error: unknown) => void,
): void {
  const routes = new Map<number, FrameHandler>([
    [DELIVER_KEY, handlers.deliver],
    [CONSUMER_UPDATE_KEY, (frame) => handlers.consumerUpdate(parseConsumerUpdate(frame))],
  ]);
  routeFrames(connection, routes, onError);
}
