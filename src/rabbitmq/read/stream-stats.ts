import type { ClientParams } from 'rabbitmq-stream-js-client';
import type { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { StreamStatsRequest } from 'rabbitmq-stream-js-client/dist/requests/stream_stats_request.js';
import type { StreamStatsResponse } from 'rabbitmq-stream-js-client/dist/responses/stream_stats_response.js';
import { describe, isRetriable, SourceError, StreamWindowsError } from '../../common/errors.js';
import { OK, codeName, isRetriableCode } from '../../common/stream-protocol.js';
import { abandon } from '../gaps/client-socket.js';
import { openMemberConnection, type MemberReach } from '../cluster/node-connection.js';
import { StreamCommandError } from '../stream-command-error.js';

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
export async function streamStats(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
  member: MemberReach = {},
): Promise<StreamStats> {
  const deadline = Date.now() + timeoutMs;
  let connection: Connection;
  try {
    ({ connection } = await openMemberConnection(params, stream, 'leader', {
      timeoutMs,
      ...member,
    }));
  } catch (error) {
    // The Metadata query's refusal, as StreamStats' own would be: retriable while a leader is
    // elected, final for a stream that does not exist.
    if (error instanceof StreamCommandError) {
      throw new SourceError(stream, error.retriable, describe(error));
    }
    // A refusal or a client whose internals moved is final; only a passing failure retries.
    if (error instanceof StreamWindowsError && !isRetriable(error)) throw error;
    throw new SourceError(stream, true, describe(error));
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new SourceError(
            stream,
            true,
            `RabbitMQ did not answer StreamStats within ${timeoutMs} ms`,
          ),
        ),
      Math.max(deadline - Date.now(), 1),
    );
  });
  try {
    return await Promise.race([queryStreamStats(connection, stream), late]);
  } finally {
    clearTimeout(timer);
    // Not a Close round trip: the connection may be the one that did not answer.
    abandon(connection);
  }
}
