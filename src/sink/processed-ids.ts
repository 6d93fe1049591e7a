import { ConfigError } from '../common/errors.js';
import { messageDecoder, type SinkFormat } from './message-decoder.js';
import type { SinkTransaction } from '../database/sink-database.js';
import type { SinkBatch, SinkMessage, SinkShape } from './sink-shape.js';
import { quoteIdentifier } from '../database/sql-identifier.js';

/** The options of `processedIds`: the table of ids applied so far, and each message's id. */
export interface ProcessedIdsOptions<V> {
  /**
   * The table of the ids applied so far: one column `id` (text, primary key), created when
   * missing. It grows by one row per distinct id: prune it by your own rule (ids older than
   * a producer can repeat them).
   */
  readonly table: string;
  /** The business id of a message's value: a message whose id was applied before is passed over. */
  readonly id: (value: V) => string;
  /** How each message is decoded (default 'json'). */
  readonly decode?: SinkFormat<V>;
  /** Applies the batch's messages whose id is new (the first of a batch's repeats). */
  readonly apply: (tx: SinkTransaction, batch: SinkBatch<V>) => Promise<void>;
}

/**
 * Deduplication by a business id, for messages that may repeat under different offsets (a
 * producer that sends a fact twice): the ids are inserted in the batch's transaction, the
 * table's uniqueness tells which are new, and only those reach `apply`.
 */
export function processedIds<V = unknown>(options: ProcessedIdsOptions<V>): SinkShape<V> {
  const table = quoteIdentifier('table', options.table, true);
  const { id, apply } = options;
  if (typeof id !== 'function') throw new ConfigError('id', 'must be a function of a value', id);
  if (typeof apply !== 'function') {
    throw new ConfigError('apply', 'must be a function of (tx, batch)', apply);
  }
  const format = options.decode ?? 'json';
  return {
    decode: messageDecoder(format),
    readsResults: format === 'result',
    async prepare(tx) {
      await tx.query(`CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY)`);
    },
    async apply(tx, batch) {
      const firstOfId = new Map<string, SinkMessage<V>>();
      for (const message of batch.messages) {
        const key = id(message.value);
        if (typeof key !== 'string') {
          throw new Error(`the id of the message at offset ${message.offset} is not a string`);
        }
        if (!firstOfId.has(key)) firstOfId.set(key, message);
      }
      if (firstOfId.size === 0) return;
      const { rows } = await tx.query<{ id: string }>(
        `INSERT INTO ${table} (id) SELECT unnest($1::text[]) ON CONFLICT (id) DO NOTHING RETURNING id`,
        [[...firstOfId.keys()]],
      );
      const fresh = new Set(rows.map((r) => r.id));
      const messages = [...firstOfId].filter(([key]) => fresh.has(key)).map(([, m]) => m);
      messages.sort((a, b) => (a.offset < b.offset ? -1 : 1));
      const [first] = messages;
      const last = messages.at(-1);
      if (first === undefined || last === undefined) return;
      await apply(tx, { ...batch, firstOffset: first.offset, lastOffset: last.offset, messages });
    },
  };
}
