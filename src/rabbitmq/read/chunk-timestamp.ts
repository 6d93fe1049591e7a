import { RetentionGapError } from '../../common/errors.js';
import type { Source } from '../../ports/ports.js';
import { readRange } from './stream-range.js';

/**
 * The timestamp of the chunk that holds `offset` (`Source.timestampAt`), read through `plain`,
 * a source of the stream read without a consumer group (a single active consumer's read would
 * join its group): where the stream ends, then one read of that offset; undefined when it is
 * not stored (retention removed it, or it was not written yet).
 */
export async function chunkTimestampAt(
  plain: Source,
  offset: bigint,
  timeoutMs: number,
): Promise<number | undefined> {
  if (offset >= (await plain.endOffset())) return undefined;
  let timestamp: number | undefined;
  try {
    await readRange(plain, offset, offset + 1n, timeoutMs, (chunk) => {
      timestamp = chunk.timestamp;
      return true;
    });
  } catch (error) {
    if (error instanceof RetentionGapError) return undefined;
    throw error;
  }
  return timestamp;
}
