import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import type { MetadataUpdateResponse } from 'rabbitmq-stream-js-client/dist/responses/metadata_update_response.js';
import { ClientInternalsError } from '../../common/errors.js';
import { routeFrames } from './client-socket.js';
import { decodePublishErrorBody } from './publish-errors.js';

/**
 * GAPS (rabbitmq-stream-js-client 1.0.0), both on the way a confirm comes back:
 *   - confirms are per connection, not per publisher: every
 *     `publisher.on('publish_confirm', …)` listener hears the confirms of every publisher on
 *     the same connection (with no publisher id in its arguments), and connection listeners
 *     can never be removed;
 *   - the client formats every socket read with `util.inspect` for a debug line whatever the
 *     log level before decoding it (`received()`), and decodes each confirm into objects:
 *     about 30 µs of the main thread per confirm in the e2e job's profile
 *     (docs/internals/performance.md).
 *
 * WORKAROUND: one router per connection reads the PublishConfirm and PublishError frames raw
 * off the socket, before the client sees them (./client-socket.ts `routeFrames`; every other
 * frame goes on to the client as before), and dispatches them by the publisher id in the
 * frame to whoever registered that id; stream metadata changes (stream deleted, leader
 * moved: the broker drops the stream's publishers) come through the client and go to the
 * publishers of that stream. test/integration/rabbitmq-target.test.ts shows two stock
 * publishers on one connection each hearing the other's confirms, and the client's
 * `received()` reading every confirm; when neither holds, this can go.
 */

export interface PublisherEvents {
  readonly stream: string;
  confirmed(publishingIds: readonly bigint[]): void;
  failed(publishingId: bigint, code: number): void;
  /** The broker no longer knows this publisher (its stream changed); `code` says why. */
  streamChanged(code: number): void;
}

/** The key of a PublishConfirm frame (the broker's, never a response's). */
export const PUBLISH_CONFIRM_KEY = 0x0003;
/** The key of a PublishError frame. */
export const PUBLISH_ERROR_KEY = 0x0004;
/** Key and version, before a confirm's or an error's body. */
const FRAME_HEAD = 4;

export class PublishRouter {
  private readonly publishers = new Map<number, PublisherEvents>();

  /**
   * Routes `connection`'s confirms and errors from now on. What throws while its socket's
   * reads are handled (a malformed frame) goes to `onError`; the connection is then unusable.
   */
  constructor(connection: Connection, onError: (error: unknown) => void) {
    const routes = new Map([
      [PUBLISH_CONFIRM_KEY, (frame: Buffer) => this.confirmed(frame.subarray(FRAME_HEAD))],
      [PUBLISH_ERROR_KEY, (frame: Buffer) => this.failed(frame.subarray(FRAME_HEAD))],
    ]);
    routeFrames(connection, routes, onError);
    connection.on('metadata_update', (event: MetadataUpdateResponse) => {
      for (const publisher of this.publishers.values()) {
        if (publisher.stream === event.metadataInfo.stream) {
          publisher.streamChanged(event.metadataInfo.code);
        }
      }
    });
  }

  register(publisherId: number, events: PublisherEvents): void {
    this.publishers.set(publisherId, events);
  }

  unregister(publisherId: number): void {
    this.publishers.delete(publisherId);
  }

  private confirmed(body: Buffer): void {
    const { publisherId, publishingIds } = decodePublishConfirmBody(body);
    this.publishers.get(publisherId)?.confirmed(publishingIds);
  }

  private failed(body: Buffer): void {
    const { publisherId, errors } = decodePublishErrorBody(body);
    const publisher = this.publishers.get(publisherId);
    for (const error of errors) publisher?.failed(error.publishingId, error.code);
  }
}

/**
 * Decodes a PublishConfirm frame body after key and version (PROTOCOL.adoc,
 * "PublishConfirm"): PublisherId uint8, then [PublishingId uint64] (uint32 count).
 */
export function decodePublishConfirmBody(body: Buffer): {
  readonly publisherId: number;
  readonly publishingIds: readonly bigint[];
} {
  const publisherId = body.readUInt8(0);
  const count = body.readUInt32BE(1);
  if (body.length < 5 + count * 8) {
    throw new ClientInternalsError(
      `PublishConfirm frame for publisher ${publisherId} announces ${count} ids ` +
        `but holds ${body.length} bytes`,
    );
  }
  const publishingIds: bigint[] = [];
  for (let i = 0, pos = 5; i < count; i++, pos += 8) publishingIds.push(body.readBigUInt64BE(pos));
  return { publisherId, publishingIds };
}
