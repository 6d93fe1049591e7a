import type { Source } from '../ports/ports.js';
import { decodeResultHeader } from '../result-format/result-decoder.js';

/** Where `tail --from` starts: 'last' is the stream's last result; the others are readResults'. */
export type TailFrom = bigint | 'first' | 'last' | 'next';

/**
 * Where `readResults` starts for `from`. 'last' is the first message of the stream's last
 * result: its last message tells, by its part number, how many parts of a batch come before.
 * The stream's end is asked whatever `from` is: a stream that does not exist fails here.
 */
export async function tailStart(
  source: Source,
  from: TailFrom,
): Promise<bigint | 'first' | 'next'> {
  const end = await source.endOffset();
  if (from !== 'last') return from;
  if (end === 0n) return 'first';
  const stop = new AbortController();
  try {
    for await (const chunk of source.read(end - 1n, stop.signal)) {
      const last = chunk.bytes.subarray(chunk.starts[0], chunk.ends[0]);
      try {
        return end - 1n - BigInt(decodeResultHeader(last).part?.index ?? 0);
      } catch {
        return end - 1n; // not a result: follow() reports it
      }
    }
  } finally {
    stop.abort();
  }
  // A read ends only when aborted, and nothing aborts this one before its first chunk.
  return end - 1n;
}
