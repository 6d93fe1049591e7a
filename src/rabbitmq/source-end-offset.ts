import { randomUUID } from 'node:crypto';
import type { ClientParams } from 'rabbitmq-stream-js-client';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { StreamStatsRequest } from 'rabbitmq-stream-js-client/dist/requests/stream_stats_request.js';
import type { StreamStatsResponse } from 'rabbitmq-stream-js-client/dist/responses/stream_stats_response.js';
import { StreamWindowsError } from '../core/errors.js';
import { OK } from './response-codes.js';
import { silentLogger } from './silent-logger.js';
import { Subscription } from './source-subscription.js';

/**
 * One past the last committed offset of `stream` (0 when it is empty).
 *
 * StreamStats only gives chunk ids: `committed_chunk_id` is the FIRST offset of the last
 * committed chunk (-1 for an empty stream; measured on RabbitMQ 4.0.5: three messages in
 * two chunks report 2, not 4). So the last chunk is read too, for its record count: one
 * subscription with credit 1 at that chunk id.
 */
export async function endOffset(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
): Promise<bigint> {
  const lastChunk = await committedChunkId(params, stream);
  if (lastChunk < 0n) return 0n;
  const subscription = await Subscription.open(params, {
    stream,
    from: lastChunk,
    credit: 1,
    connectTimeoutMs: timeoutMs,
  });
  try {
    const timer = new Promise<undefined>((resolve) =>
      setTimeout(() => resolve(undefined), timeoutMs).unref(),
    );
    const chunk = await Promise.race([subscription.take(), timer]);
    if (chunk === undefined) {
      throw new StreamWindowsError(
        `the last chunk (offset ${lastChunk}) of stream '${stream}' was not delivered within ` +
          `${timeoutMs} ms, so its end offset is unknown (is it a tracking chunk from store_offset?)`,
      );
    }
    return chunk.firstOffset + BigInt(chunk.count);
  } finally {
    await subscription.close();
  }
}

async function committedChunkId(params: ClientParams, stream: string): Promise<bigint> {
  const connection = await Connection.connect(
    { ...params, connectionId: randomUUID() },
    silentLogger,
  );
  try {
    const response = await connection.sendAndWait<StreamStatsResponse>(
      new StreamStatsRequest(stream),
    );
    if (response.code !== OK) {
      throw new StreamWindowsError(
        `querying the statistics of stream '${stream}' failed with code ${response.code}` +
          (response.code === 0x02 ? ' (stream does not exist)' : ''),
      );
    }
    return response.statistics.committedChunkId;
  } finally {
    await connection.close({ closingCode: 0, closingReason: '', manuallyClose: true });
  }
}
