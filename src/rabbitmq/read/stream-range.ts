import { SourceError } from '../../common/errors.js';
import type { Source, SourceChunk } from '../../ports/ports.js';

/**
 * Reads the messages of `source`'s stream at offsets [`from`, `until`) in offset order and
 * hands each chunk to `visit` with how many of its messages lie below `until`, until `visit`
 * answers true or `until` is reached; the read is aborted then, so nothing beyond `until` is
 * waited for. The scans of a target stream (`hasPublished`, `readResult`) read through this.
 *
 * Each wait for a chunk is bounded by `timeoutMs`: past it, a retriable SourceError naming
 * the offset waited for. `from` below the first offset still stored fails as the source's
 * reads do (a RetentionGapError).
 */
export async function readRange(
  source: Source,
  from: bigint | 'first',
  until: bigint,
  timeoutMs: number,
  visit: (chunk: SourceChunk, count: number) => boolean,
): Promise<void> {
  const reading = new AbortController();
  let next = from === 'first' ? 0n : from;
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      reading.abort();
    }, timeoutMs);
  };
  try {
    arm();
    for await (const chunk of source.read(from, reading.signal)) {
      const below = until - chunk.firstOffset;
      const count = below >= BigInt(chunk.count) ? chunk.count : Math.max(Number(below), 0);
      if (count > 0 && visit(chunk, count)) return;
      next = chunk.firstOffset + BigInt(chunk.count);
      if (next >= until) return;
      arm();
    }
    // A read ends only when aborted, and only the timer aborts it while it runs.
    throw new SourceError(
      source.stream,
      true,
      // The timer above sets it, which TypeScript cannot see.
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- see above
      timedOut
        ? `no message arrived within ${timeoutMs} ms`
        : `the read ended before offset ${until}`,
      next,
    );
  } finally {
    clearTimeout(timer);
    reading.abort();
  }
}
