import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { ConsumerUpdateResponse } from 'rabbitmq-stream-js-client/dist/requests/consumer_update_response.js';
import { Offset } from 'rabbitmq-stream-js-client';
import { StreamWindowsError } from '../../common/errors.js';
import { OK } from '../../common/stream-protocol.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): single active consumers cannot be run safely on the
 * stock client:
 *   - its update listener `(consumerRef, stream) => Promise<Offset>` is never told whether a
 *     ConsumerUpdate activates or deactivates the consumer, and without one it answers with
 *     the offset declared at subscribe time (a promoted standby resumes from a stale offset);
 *   - nothing stops delivery once the broker deactivates a consumer: chunks already received
 *     go on to the handler, and the answer goes out at once, before the work under way is done;
 *   - the super-stream consumer takes no update listener at all, and `restart()` subscribes
 *     again without the `super-stream` property (so the partition rule is lost).
 *
 * WORKAROUND: ConsumerUpdate frames (key 0x001a, server to client: correlation id uint32,
 * subscription id uint8, active uint8) are taken from the socket by the same frame router as
 * Deliver frames (./consume-raw-chunks.ts), so they are seen in order with the chunks; the
 * subscription (../read/source-subscription.ts) decides what to answer and when, and answers with
 * `answerConsumerUpdate`. test/integration/rabbitmq-single-active.test.ts shows the stock
 * consumer going on after deactivation; when it stops and its listener learns the state, this
 * file can go.
 *
 * What RabbitMQ 4.0.5 does with the answer (rabbit_stream_reader.erl, the
 * `{response, _, {consumer_update, _, _}}` clause of handle_frame_post_auth): a code other than
 * OK is only logged; an active consumer's reader starts at the answered offset; an inactive one
 * that was stepping down makes the SAC coordinator activate the next member. An unanswered
 * update closes the connection after the stream plugin's `request_timeout` (60 s by default;
 * `check_outstanding_requests`).
 */

export const CONSUMER_UPDATE_KEY = 0x001a;
/** key uint16 | version uint16 | correlation id uint32 | subscription id uint8 | active uint8. */
const FRAME_LENGTH = 2 + 2 + 4 + 1 + 1;

export interface ConsumerUpdate {
  readonly correlationId: number;
  readonly subscriptionId: number;
  /** Whether the broker makes the consumer the active one (true) or tells it to step down. */
  readonly active: boolean;
}

/** Reads a ConsumerUpdate frame, without its size prefix (starting at the key). */
export function parseConsumerUpdate(frame: Buffer): ConsumerUpdate {
  if (frame.length < FRAME_LENGTH || frame.readUInt16BE(0) !== CONSUMER_UPDATE_KEY) {
    throw new StreamWindowsError(
      `malformed ConsumerUpdate frame (${frame.length} bytes): expected key ` +
        `0x${CONSUMER_UPDATE_KEY.toString(16)} and ${FRAME_LENGTH} bytes`,
    );
  }
  return {
    correlationId: frame.readUInt32BE(4),
    subscriptionId: frame.readUInt8(8),
    active: frame.readUInt8(9) !== 0,
  };
}

/**
 * Answers a ConsumerUpdate: for an activation, where the broker starts delivering; for a step
 * down the broker ignores the offset and activates the next member of the group.
 */
export function answerConsumerUpdate(
  connection: Connection,
  correlationId: number,
  from: bigint | 'first',
): Promise<void> {
  return connection.send(
    new ConsumerUpdateResponse({
      correlationId,
      responseCode: OK,
      offset: from === 'first' ? Offset.first() : Offset.offset(from),
    }),
  );
}
