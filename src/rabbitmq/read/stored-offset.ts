import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { QueryOffsetRequest } from 'rabbitmq-stream-js-client/dist/requests/query_offset_request.js';
import { StoreOffsetRequest } from 'rabbitmq-stream-js-client/dist/requests/store_offset_request.js';
import type { QueryOffsetResponse } from 'rabbitmq-stream-js-client/dist/responses/query_offset_response.js';
import { SourceError } from '../../common/errors.js';
import { OK, codeName, isRetriableCode } from '../../common/stream-protocol.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { onLeader } from './on-leader.js';

/** QueryOffset's answer for a reference nothing was stored under. */
const NO_OFFSET = 0x13;
/** Between reads of a stored offset until it shows (StoreOffset has no answer). */
const POLL_MS = 20;

/**
 * The offset stored under `reference` on `stream` (server-side offset tracking), undefined
 * when none was; asked on the stream's leader. Any node would answer too, but only from the
 * leader's tracking (the broker's QueryOffset looks the leader up), so a stream without a live
 * leader answers nowhere. Within `timeoutMs`; see `onLeader` for the errors.
 */
export function queryStoredOffset(
  params: ClientParams,
  stream: string,
  reference: string,
  timeoutMs: number,
  reach: MemberReach = {},
): Promise<bigint | undefined> {
  return onLeader(params, stream, timeoutMs, reach, 'QueryOffset', (connection) =>
    query(connection, stream, reference),
  );
}

/**
 * Stores `offset` under `reference` on `stream` and resolves once the leader answers it back:
 * StoreOffset has no response (the broker appends a tracking chunk when it gets to it, and
 * ignores a reference over 255 bytes), so the store is known only by reading it.
 */
export function storeOffset(
  params: ClientParams,
  stream: string,
  reference: string,
  offset: bigint,
  timeoutMs: number,
  reach: MemberReach = {},
): Promise<void> {
  return onLeader(params, stream, timeoutMs, reach, 'StoreOffset', async (connection, late) => {
    await connection.send(new StoreOffsetRequest({ reference, stream, offsetValue: offset }));
    while ((await query(connection, stream, reference)) !== offset) {
      if (late()) {
        throw new SourceError(stream, true, `the offset stored under '${reference}' did not show`);
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  });
}

async function query(
  connection: Connection,
  stream: string,
  reference: string,
): Promise<bigint | undefined> {
  const response = await connection.sendAndWait<QueryOffsetResponse>(
    new QueryOffsetRequest({ reference, stream }),
  );
  if (response.code === OK) return response.offsetValue;
  if (response.code === NO_OFFSET) return undefined;
  throw new SourceError(
    stream,
    isRetriableCode(response.code),
    `querying the offset stored under '${reference}' failed with code ${response.code} (${codeName(response.code)})`,
  );
}
