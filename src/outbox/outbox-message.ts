import { encodeMessage } from '../codecs/amqp-message.js';
import type { OutboxRecord } from './outbox-table.js';

/** Application properties the relay sets on every message, beside the row's own headers. */
export const OutboxProperty = {
  /** The row's key (the partition key of a super stream). */
  KEY: 'sw-outbox-key',
  /** The row's id in the outbox table, as a decimal string. */
  ID: 'sw-outbox-id',
  /** The id (xid8) of the transaction that inserted it, as a decimal string. */
  TXID: 'sw-outbox-txid',
} as const;

/**
 * The message a row becomes: its body as one data section, its content type, its event time
 * as the creation time (a job's default event time), its headers as application properties
 * and the relay's three. A function of the row alone: the same row gives the same bytes after
 * any crash.
 */
export function outboxMessage(row: OutboxRecord): Uint8Array {
  return encodeMessage({
    properties: { creationTime: Number(row.event_ms), contentType: row.content_type },
    applicationProperties: {
      ...row.headers,
      [OutboxProperty.KEY]: row.key,
      [OutboxProperty.ID]: row.id,
      [OutboxProperty.TXID]: row.txid,
    },
    body: { type: 'data', sections: [row.body] },
  });
}
