import { ConfigError } from '../common/errors.js';
import type { Source, Target } from '../ports/ports.js';
import { decodeResultHeader } from '../result-format/result-decoder.js';

/**
 * Refuses a `source` other than the stream the producer's results were read from (the
 * `sw-source` of its result under `id`, its last step's): the results' offsets would be
 * measured against another stream's end. A job over several inputs (`merge(a,b)`) is refused
 * by name: its offsets are merged positions, which no one stream's end measures. Nothing is
 * checked without a step (`id` 0) or when its result is gone (retention).
 */
export async function checkResultsSource(
  source: Source,
  target: Target,
  id: bigint,
): Promise<void> {
  if (id === 0n) return;
  const bytes = await target.readResult(id);
  if (bytes === undefined) return;
  const read = decodeResultHeader(bytes).source;
  if (read === source.stream) return;
  const job = `producer '${target.producer}' on '${target.stream}'`;
  throw new ConfigError(
    'source',
    read.startsWith('merge(')
      ? `must be the stream the job reads, but ${job} reads several inputs (${read}), whose offsets are merged positions no one stream measures: status and skip do not apply to a job over several inputs yet`
      : `must be the stream the job reads: the last result of ${job} was read from '${read}'`,
    source.stream,
  );
}
