import type { ClientParams } from 'rabbitmq-stream-js-client';
import { Subscription } from './source-subscription.js';
import { streamStats } from './stream-stats.js';

/**
 * One past the last offset a reader of `stream` will be delivered (0 when it is empty).
 *
 * StreamStats only gives chunk ids: `committed_chunk_id` is the FIRST offset of the last
 * committed chunk (measured on RabbitMQ 4.0.5: three messages in two chunks report 2, not
 * 4). So the last chunk is read too, for its record count: one subscription with credit 1
 * at that chunk id. The broker delivers user chunks only: when the last chunk is a tracking
 * chunk (a consumer's `store_offset` on this stream), nothing arrives, and the end of what
 * readers get is that chunk's id — known only once `timeoutMs` has passed.
 */
export async function endOffset(
  params: ClientParams,
  stream: string,
  timeoutMs: number,
): Promise<bigint> {
  const { committedChunkId } = await streamStats(params, stream);
  if (committedChunkId < 0n) return 0n;
  const subscription = await Subscription.open(params, {
    stream,
    from: committedChunkId,
    credit: 1,
    connectTimeoutMs: timeoutMs,
  });
  try {
    let timer: NodeJS.Timeout | undefined;
    const nothing = new Promise<undefined>(
      (resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)),
    );
    const chunk = await Promise.race([subscription.take(), nothing]).finally(() =>
      clearTimeout(timer),
    );
    return chunk === undefined ? committedChunkId : chunk.firstOffset + BigInt(chunk.count);
  } finally {
    await subscription.close();
  }
}
