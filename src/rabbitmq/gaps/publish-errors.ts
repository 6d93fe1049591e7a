import type { PublishErrorResponse } from 'rabbitmq-stream-js-client/dist/responses/publish_error_response.js';
import { ClientInternalsError } from '../../common/errors.js';

/**
 * GAP (rabbitmq-stream-js-client 1.0.0): PublishError frames are mis-parsed. The frame is
 *
 *   key 0x0004, version, PublisherId uint8, [PublishingId uint64, Code uint16] (uint32 count)
 *
 * but the client's decoder has no case for it and falls through to the generic response
 * path, which reads a uint32 "correlation id" and a uint16 "code" and keeps the rest as a
 * payload (a reader over the remaining bytes). The event it emits then says publisher `undefined`, publishing id `undefined`, and
 * a code made of the array count's last byte and the id's first byte.
 *
 * WORKAROUND: the generic path consumed the frame losslessly (correlation id, code, payload
 * are consecutive bytes), so the original frame body is put back together from them and
 * parsed as the protocol says. test/integration/rabbitmq-target.test.ts shows the stock event
 * next to ours; when the stock event carries the right publisher, id and code, this can go.
 */

export interface PublishingError {
  readonly publishingId: bigint;
  readonly code: number;
}

export interface PublishErrors {
  readonly publisherId: number;
  readonly errors: readonly PublishingError[];
}

/** What the client's decoder actually produced for a PublishError frame. */
interface MisparsedPublishError {
  readonly correlationId: number;
  readonly code: number;
  readonly payload: { readonly data: Buffer };
}

export function parsePublishErrors(event: PublishErrorResponse): PublishErrors {
  const raw = (event as unknown as { response?: Partial<MisparsedPublishError> }).response;
  if (
    raw === undefined ||
    typeof raw.correlationId !== 'number' ||
    typeof raw.code !== 'number' ||
    !Buffer.isBuffer(raw.payload?.data)
  ) {
    throw new ClientInternalsError(
      'rabbitmq-stream-js-client changed how it decodes PublishError frames; ' +
        'src/rabbitmq/gaps/publish-errors.ts needs updating',
    );
  }
  const rest = raw.payload.data;
  const body = Buffer.alloc(6 + rest.length);
  body.writeUInt32BE(raw.correlationId >>> 0, 0);
  body.writeUInt16BE(raw.code & 0xffff, 4);
  rest.copy(body, 6);
  return decodePublishErrorBody(body);
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
