// readRange: how the target-stream scans (hasPublished, readResult) read a range of offsets.
import { describe, expect, it } from 'vitest';
import { SourceError } from '../../../../src/common/errors.js';
import { packChunk } from '../../../../src/ports/pack-chunk.js';
import type { Source, SourceChunk } from '../../../../src/ports/ports.js';
import { readRange } from '../../../../src/rabbitmq/read/stream-range.js';

/** Chunks of `size` one-byte messages from `from` on, for ever, or none at all ('silent'). */
function fakeSource(size: number | 'silent') {
  const reads: { from: bigint | 'first'; signal: AbortSignal }[] = [];
  const source: Source = {
    stream: 'results',
    endOffset: () => Promise.resolve(0n),
    async *read(from, signal) {
      if (typeof from === 'function') throw new Error('not asked here');
      reads.push({ from, signal });
      if (size === 'silent') {
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        return;
      }
      for (let next = from === 'first' ? 0n : from; !signal.aborted; next += BigInt(size)) {
        yield packChunk(
          next,
          0,
          Array.from({ length: size }, () => new Uint8Array([1])),
        );
      }
    },
  };
  return { source, reads };
}

describe('reading a range of a target stream', () => {
  it('hands over the messages below the upper bound only, then aborts the read', async () => {
    const { source, reads } = fakeSource(4);
    const seen: [bigint, number][] = [];
    await readRange(source, 2n, 11n, 1_000, (chunk: SourceChunk, count) => {
      seen.push([chunk.firstOffset, count]);
      return false;
    });
    expect(seen).toEqual([
      [2n, 4],
      [6n, 4],
      [10n, 1],
    ]);
    expect(reads[0]?.signal.aborted).toBe(true);
  });

  it('stops at the chunk the visitor answers true for', async () => {
    const { source, reads } = fakeSource(4);
    const seen: bigint[] = [];
    await readRange(source, 'first', 100n, 1_000, (chunk) => {
      seen.push(chunk.firstOffset);
      return chunk.firstOffset === 4n;
    });
    expect(seen).toEqual([0n, 4n]);
    expect(reads[0]?.signal.aborted).toBe(true);
  });

  it('fails with a retriable SourceError naming the offset when no chunk comes within the timeout', async () => {
    const { source, reads } = fakeSource('silent');
    const error: unknown = await readRange(source, 7n, 20n, 50, () => false).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SourceError);
    expect(error).toMatchObject({ stream: 'results', offset: 7n, retriable: true });
    expect((error as Error).message).toContain('no message arrived within 50 ms');
    expect(reads[0]?.signal.aborted).toBe(true);
  });
});
