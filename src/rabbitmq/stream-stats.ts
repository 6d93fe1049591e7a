import { randomUUID } from 'node:crypto';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { StreamStatsRequest } from 'rabbitmq-stream-js-client/dist/requests/stream_stats_request.js';
import type { StreamStatsResponse } from 'rabbitmq-stream-js-client/dist/responses/stream_stats_response.js';
import { describe, SourceError } from '../common/errors.js';
import { OK, STREAM_NOT_AVAILABLE, codeName } from '../common/stream-protocol.js';
import { silentLogger } from './silent-logger.js';

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
      response.code === STREAM_NOT_AVAILABLE,
      `querying its statistics failed with code ${response.code} (${codeName(response.code)})`,
    );
  }
  return response.statistics;
}

/** Asks on a connection of its own; failing to connect is a retriable SourceError. */
export async function streamStats(params: ClientParams, stream: string): Promise<StreamStats> {
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...params, connectionId: randomUUID() }, silentLogger);
  } catch (error) {
    throw new SourceError(stream, true, `cannot connect to RabbitMQ: ${describe(error)}`);
  }
  try {
    return await queryStreamStats(connection, stream);
  } finally {
    await connection.close({ closingCode: 0, closingReason: '', manuallyClose: true });
  }
}
