import { ClientInternalsError } from '../../common/errors.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): PublishError frames are mis-parsed. The frame is
 *
 *   key 0x0004, version, PublisherId uint8, [PublishingId uint64, Code uint16] (uint32 count)
 *
 * but the client's decoder has no case for it and falls through to the generic response
 * path, which reads a uint32 "correlation id" and a uint16 "code" and keeps the rest as a
 * payload. The event it emits then says publisher `undefined`, publishing id `undefined`, and
 * a code made of the array count's last byte and the id's first byte.
 *
 * WORKAROUND: the frame is read raw, before the client's decoder (./publish-confirms.ts),
 * and parsed as the protocol says. test/integration/rabbitmq-target.test.ts shows the stock
 * event next to ours; when the stock event carries the right publisher, id and code, the
 * decoding here can go.
 */

export interface PublishingError {
  readonly publishingId: bigint;
  readonly code: number;
}

export interface PublishErrors {
  readonly publisherId: number;
  readonly errors: readonly PublishingError[];
}

/** Decodes a PublishError frame body after key and version. */
export function decodePublishErrorBody(body: Buffer): PublishErrors {
  const publisherId = body.readUInt8(0);
  const count = body.readUInt32BE(1);
  if (body.length < 5 + count * 10) {
    throw new ClientInternalsError(
      `PublishError frame for publisher ${publisherId} announces ${count} errors ` +
        `but holds ${body.length} bytes`,
    );
  }
  const errors: PublishingError[] = [];
  for (let i = 0, pos = 5; i < count; i++, pos += 10) {
    errors.push({ publishingId: body.readBigUInt64BE(pos), code: body.readUInt16BE(pos + 8) });
  }
  return { publisherId, errors };
}
