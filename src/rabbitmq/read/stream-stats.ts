import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { StreamStatsRequest } from 'rabbitmq-stream-js-client/dist/requests/stream_stats_request.js';
import type { StreamStatsResponse } from 'rabbitmq-stream-js-client/dist/responses/stream_stats_response.js';
import { SourceError } from '../../common/errors.js';
import { OK, codeName, isRetriableCode } from '../../common/stream-protocol.js';
import type { MemberReach } from '../cluster/node-connection.js';
import { onLeader } from './on-leader.js';

/**
 * A stream's chunk ids as StreamStats reports them: the first offset of its first chunk, and
 * of its last committed chunk (both -1 while the stream is empty). Chunk ids only: the last
 * chunk's length is not in them (see ./source-end-offset.ts).
 */
export interface StreamStats {
  readonly firstChunkId: bigint;
  readonly committedChunkId: bigint;
}

/** Asks on an open connection; a refusal is a SourceError (retriable while a leader is elected). */
export async function queryStreamStats(
  connection: Connection,
  stream: string,
): Promise<StreamStats> {
  const response = await connection.sendAndWait<StreamStatsResponse>(
    new StreamStatsRequest(stream),
  );
  if (response.code !== OK) {
    throw new SourceError(
      stream,
      isRetriableCode(response.code),
      `querying its statistics failed with code ${response.code} (${codeName(response.code)})`,
    );
  }
  return response.statistics;
}

/**
 * Asks the stream's leader, on a connection of its own, all within `timeoutMs`. Any node
 * answers StreamStats, but from its own member of the stream (the first live one when it has
 * none), and a replica's committed chunk id lags the leader's: only the leader's is the
 * stream's committed end. Failing to connect, no answer in time, or no leader to ask (one is
 * being elected) is a retriable SourceError; a final failure (a refused connection, a stream
 * that does not exist, client internals that moved) is not retriable.
 */
export function streamStats(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
  member: MemberReach = {},
): Promise<StreamStats> {
  return onLeader(params, stream, timeoutMs, member, 'StreamStats', (connection) =>
    queryStreamStats(connection, stream),
  );
}
