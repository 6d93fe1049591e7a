import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { TurnWrites } from '../turn-writes.js';
import { socketOf } from './client-socket.js';

const CREDIT_KEY = 0x0009;
const FRAME_BYTES = 11;
/** Credit is a uint16 in the frame. */
const MAX_CREDIT = 0xffff;

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): `connection.send(new CreditRequest(...))` builds the
 * 11-byte Credit frame in a zero-filled 64 KiB buffer and formats it with `util.inspect` for
 * a debug line whatever the log level, once per chunk delivered (`util.inspect` alone was
 * ~4% of a bare consumer's samples, bench/profile-e2e.ts consume).
 *
 * WORKAROUND: write the frame to the connection's socket ourselves, in order with the
 * client's own writes (the same socket), and only one per turn of the event loop: the credit
 * granted during a turn goes in one frame at its end (../turn-writes.ts), so the broker wakes
 * once for the chunks a turn took, not once per chunk; only once half the subscription's
 * credit is held does it go at once (a job's turn processing a full queue would otherwise
 * leave the broker without credit until the queue is empty, and then wait for it). Layout (PROTOCOL.adoc, "Credit"): size
 * uint32 (7) | key uint16 (0x0009) | version uint16 (1) | subscription id uint8 | credit
 * uint16. The broker answers only a refused Credit (an unknown subscription), which the
 * client's decoder reads as before. A write on a closed socket is dropped, as the client
 * does: the loss is reported by the connection's close listener.
 */
export class CreditGrants {
  private readonly turn = new TurnWrites<number>((grants) => this.write(grants));
  /** Credit granted and not written yet. */
  private held = 0;
  /** Held credit that is written at once, without waiting for the turn's end. */
  private readonly eager: number;

  /**
   * @param credit the subscription's credit: at most this many chunks are buffered or on
   *   their way. Half of it held is written at once, so that a turn that takes many chunks
   *   (a job processing a full queue) never leaves the broker without credit while it runs.
   * @param granting whether credit may still go when it is written: a subscription closed
   *   or failed meanwhile grants nothing more.
   */
  constructor(
    private readonly connection: Connection,
    private readonly subscriptionId: number,
    credit: number,
    private readonly granting: () => boolean,
  ) {
    this.eager = Math.ceil(credit / 2);
  }

  /** Grants `chunks` more chunks at the end of this turn, with the rest of the turn's. */
  grant(chunks: number): void {
    this.turn.add(chunks);
    this.held += chunks;
    if (this.held >= this.eager) this.turn.flush();
  }

  private write(grants: readonly number[]): void {
    this.held = 0;
    if (!this.granting()) return;
    let credit = 0;
    for (const chunks of grants) credit += chunks;
    const socket = socketOf(this.connection);
    while (credit > 0 && socket.readyState === 'open') {
      const now = Math.min(credit, MAX_CREDIT);
      socket.write(creditFrame(this.subscriptionId, now));
      credit -= now;
    }
  }
}

function creditFrame(subscriptionId: number, credit: number): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_BYTES);
  frame.writeUInt32BE(FRAME_BYTES - 4, 0);
  frame.writeUInt16BE(CREDIT_KEY, 4);
  frame.writeUInt16BE(1, 6);
  frame.writeUInt8(subscriptionId, 8);
  frame.writeUInt16BE(credit, 9);
  return frame;
}
