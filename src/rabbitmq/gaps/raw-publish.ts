import type { Socket } from 'node:net';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { encodeSubEntryBatch, type SubEntryCompression } from '../../codecs/sub-entry.js';
import { socketOf } from './client-socket.js';

/**
 * GAPS (rabbitmq-stream-js-client 1.0.0), all on the way a publish is written:
 *   - no raw-bytes publish: `send(body)` wraps the body in a new AMQP 1.0 message with ONE
 *     data section, so an already-encoded message (our results: several data sections,
 *     application properties) cannot be published as it is;
 *   - `send(body, { publishingId: 0n })` treats 0 as "not given" and publishes under the
 *     publisher's next counter value instead (`basicSend(0n, body)` does send 0, but still
 *     re-encodes the body);
 *   - `sendSubEntries(messages)` takes no publishing id: it writes the publisher's counter
 *     as it is (never incremented), so under deduplication the broker discards the batch;
 *   - `connection.send(request)`, the way to write a finished frame, formats the whole frame
 *     for a debug line whatever the log level (`util.inspect(body.toJSON())`: an array of one
 *     number per byte): about 80 µs of the main thread per 3 KB result in the e2e job's
 *     profile, about as much as the socket write itself (docs/internals/performance.md).
 *
 * WORKAROUND: we write the Publish frame ourselves (PROTOCOL.adoc "Publish": key 0x0002,
 * version 1, PublisherId uint8, then entries, each a PublishingId uint64 and either a plain
 * message `uint32 size + bytes` or a sub-entry batch) straight to the connection's socket, in
 * order with the client's own writes (the same socket, written synchronously as the client
 * does). The connection still owns the socket, heartbeats and confirms; only the encoding
 * and the write are ours. test/integration/rabbitmq-target.test.ts shows the first three
 * stock behaviours on the real broker, test/unit/rabbitmq/gaps/raw-send.test.ts the
 * fourth; when those tests report the stock client doing the right thing, this file can go.
 */

const PUBLISH_KEY = 0x0002;
const PUBLISH_VERSION = 1;
/** Size prefix, key, version, publisher id, entry count. */
const FRAME_HEADER = 4 + 2 + 2 + 1 + 4;
/** An entry's publishing id. */
const ENTRY_ID = 8;
/** A plain entry's message size. */
const MESSAGE_SIZE = 4;

/** One message under its own publishing id: an entry of a producer's Publish frame. */
export interface PlainEntry {
  readonly publishingId: bigint;
  readonly message: Uint8Array;
}

/**
 * Builds a Publish frame (size prefix included) with one entry under `publishingId`: one
 * message is written as a plain entry (its size, then its bytes exactly as given); several
 * as ONE sub-entry batch, so that the whole batch is stored and deduplicated under one id.
 */
export function publishFrame(
  publisherId: number,
  publishingId: bigint,
  messages: readonly Uint8Array[],
  compression: SubEntryCompression = 'none',
): Buffer {
  const [single] = messages;
  if (messages.length === 1 && single !== undefined) {
    return plainEntriesFrame(publisherId, [{ publishingId, message: single }]);
  }
  const batch = encodeSubEntryBatch(messages, compression);
  const frame = frameHeader(publisherId, 1, ENTRY_ID + batch.length);
  frame.writeBigUInt64BE(publishingId, FRAME_HEADER);
  frame.set(batch, FRAME_HEADER + ENTRY_ID);
  return frame;
}

/**
 * Builds a Publish frame of plain entries, each message under its own publishing id, each
 * confirmed (or refused) on its own: how a producer writes several messages at once.
 */
export function plainEntriesFrame(publisherId: number, entries: readonly PlainEntry[]): Buffer {
  const frame = frameHeader(publisherId, entries.length, plainEntriesBytes(entries));
  let at = FRAME_HEADER;
  for (const { publishingId, message } of entries) {
    frame.writeBigUInt64BE(publishingId, at);
    frame.writeUInt32BE(message.length, at + ENTRY_ID);
    frame.set(message, at + ENTRY_ID + MESSAGE_SIZE);
    at += ENTRY_ID + MESSAGE_SIZE + message.length;
  }
  return frame;
}

/** What plain entries add to a Publish frame: the frame is this plus 13 bytes. */
export function plainEntriesBytes(entries: readonly PlainEntry[]): number {
  let bytes = 0;
  for (const { message } of entries) bytes += ENTRY_ID + MESSAGE_SIZE + message.length;
  return bytes;
}

/** A frame of `bodyBytes` after its header, the header written. */
function frameHeader(publisherId: number, entries: number, bodyBytes: number): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_HEADER + bodyBytes);
  frame.writeUInt32BE(frame.length - 4, 0);
  frame.writeUInt16BE(PUBLISH_KEY, 4);
  frame.writeUInt16BE(PUBLISH_VERSION, 6);
  frame.writeUInt8(publisherId, 8);
  frame.writeUInt32BE(entries, 9);
  return frame;
}

/**
 * Writes a finished frame to the client's connection. Resolves once the socket took it; the
 * broker's answer comes later as a confirm or an error for the publishing id. On a socket
 * that is no longer open the frame is dropped and this never settles, as with the client's
 * `send`: the connection's close listener reports the loss, which fails what is in flight.
 */
export function sendFrame(connection: Connection, frame: Buffer): Promise<void> {
  return write(socketOf(connection), frame);
}

/**
 * Writes finished frames to the client's connection in order, in one socket write (the
 * socket corked meanwhile); each promise is `sendFrame`'s for its frame.
 */
export function sendFrames(connection: Connection, frames: readonly Buffer[]): Promise<void>[] {
  const socket = socketOf(connection);
  socket.cork();
  try {
    return frames.map((frame) => write(socket, frame));
  } finally {
    socket.uncork();
  }
}

function write(socket: Socket, frame: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.readyState !== 'open') return;
    socket.write(frame, (error) => {
      if (error) reject(error);
      else resolve();
    });
  });
}
