import { encodeMessage } from '../codecs/amqp-message.js';
import { ResultProperty } from '../result-format/result-format.js';
import type { OutboxRecord } from './outbox-table.js';

/** Application properties the relay sets on every message, beside the row's own headers. */
export const OutboxProperty = {
  /** The row's key (the partition key of a super stream). */
  KEY: 'sw-outbox-key',
  /** The row's id in the outbox table, as a decimal string. */
  ID: 'sw-outbox-id',
  /** The id (xid8) of the transaction that inserted it, as a decimal string. */
  TXID: 'sw-outbox-txid',
  /**
   * On a super stream only: the relay publishing id up to which every row was confirmed on its
   * partition when this message was sent, as a decimal string ('0': none). A partition's last
   * message tells by it how far the whole super stream is known to hold the relay's rows.
   */
  THROUGH: 'sw-relay-through',
} as const;

/**
 * What a message on a super stream carries beside the row: the relay's name and the message's
 * own publishing id, as a job's result does (`sw-producer`, `sw-last-offset`), so that the
 * `Target` port's `readResult` finds a partition's last message as it finds a job's last
 * result; and the publishing id every row up to which was confirmed when it was sent.
 */
export interface RelayMark {
  readonly producer: string;
  readonly publishingId: bigint;
  readonly through: bigint;
}

/**
 * The message a row becomes: its body as one data section, its content type, its event time
 * as the creation time (a job's default event time), its headers as application properties
 * and the relay's three. On a stream, a function of the row alone: the same row gives the same
 * bytes after any crash. On a super stream, `mark` adds three more (see `RelayMark`), whose
 * `through` depends on where the relay stood when it sent the row.
 */
export function outboxMessage(row: OutboxRecord, mark?: RelayMark): Uint8Array {
  return encodeMessage({
    properties: { creationTime: Number(row.event_ms), contentType: row.content_type },
    applicationProperties: {
      ...row.headers,
      [OutboxProperty.KEY]: row.key,
      [OutboxProperty.ID]: row.id,
      [OutboxProperty.TXID]: row.txid,
      ...(mark === undefined
        ? {}
        : {
            [ResultProperty.producer]: mark.producer,
            [ResultProperty.lastOffset]: mark.publishingId.toString(),
            [OutboxProperty.THROUGH]: mark.through.toString(),
          }),
    },
    body: { type: 'data', sections: [row.body] },
  });
}
