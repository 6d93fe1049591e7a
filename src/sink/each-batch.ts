import { ConfigError } from '../common/errors.js';
import { messageDecoder, type SinkFormat } from './message-decoder.js';
import type { SinkTransaction } from '../database/sink-database.js';
import type { SinkBatch, SinkShape } from './sink-shape.js';

/** The options of `eachBatch`: how messages are decoded and how a batch is applied. */
export interface EachBatchOptions<V> {
  /** How each message is decoded (default 'json'); 'result' reads a job's results. */
  readonly decode?: SinkFormat<V>;
  /** Applies a batch with the transaction's statements; throwing rolls it back. */
  readonly apply: (tx: SinkTransaction, batch: SinkBatch<V>) => Promise<void>;
}

/**
 * A sink shape of the user's own: `apply` gets the transaction and each batch. With
 * `decode: 'result'`, `V` is a `DecodedResult` (`eachBatch<DecodedResult<Totals>>`).
 */
export function eachBatch<V = unknown>(options: EachBatchOptions<V>): SinkShape<V> {
  const { apply } = options;
  if (typeof apply !== 'function') {
    throw new ConfigError('apply', 'must be a function of (tx, batch)', apply);
  }
  const format = options.decode ?? 'json';
  return { decode: messageDecoder(format), apply, readsResults: format === 'result' };
}
