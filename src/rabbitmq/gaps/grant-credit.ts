import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { socketOf } from './client-socket.js';

const CREDIT_KEY = 0x0009;
const FRAME_BYTES = 11;

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): `connection.send(new CreditRequest(...))` builds the
 * 11-byte Credit frame in a zero-filled 64 KiB buffer and formats it with `util.inspect` for
 * a debug line whatever the log level, once per chunk delivered (`util.inspect` alone was
 * ~4% of a bare consumer's samples, bench/profile-e2e.ts consume).
 *
 * WORKAROUND: write the frame to the connection's socket ourselves, in order with the
 * client's own writes (the same socket). Layout (PROTOCOL.adoc, "Credit"): size uint32 (7) |
 * key uint16 (0x0009) | version uint16 (1) | subscription id uint8 | credit uint16. The
 * broker answers only a refused Credit (an unknown subscription), which the client's decoder
 * reads as before. A write on a closed socket is dropped, as the client does: the loss is
 * reported by the connection's close listener.
 */
export function grantCredit(connection: Connection, subscriptionId: number, credit: number): void {
  const socket = socketOf(connection);
  if (socket.readyState !== 'open') return;
  const frame = Buffer.allocUnsafe(FRAME_BYTES);
  frame.writeUInt32BE(FRAME_BYTES - 4, 0);
  frame.writeUInt16BE(CREDIT_KEY, 4);
  frame.writeUInt16BE(1, 6);
  frame.writeUInt8(subscriptionId, 8);
  frame.writeUInt16BE(credit, 9);
  socket.write(frame);
}
