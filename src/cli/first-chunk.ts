import { SourceError } from '../common/errors.js';
import type { Source } from '../ports/ports.js';

/** The first chunk a read from `from` delivers; the read stops there (its subscription closes). */
export async function firstChunk(
  source: Source,
  from: bigint | 'first',
): Promise<{ firstOffset: bigint; timestamp: number }> {
  const stop = new AbortController();
  try {
    for await (const chunk of source.read(from, stop.signal)) {
      return { firstOffset: chunk.firstOffset, timestamp: chunk.timestamp };
    }
  } finally {
    stop.abort();
  }
  // A read ends only when aborted, and nothing aborts this one before its first chunk.
  throw new SourceError(
    source.stream,
    true,
    'the read ended before delivering a chunk',
    from === 'first' ? undefined : from,
  );
}
