import type { RejectedMessage } from './batch-transaction.js';
import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { createIfMissing } from '../database/create-if-missing.js';
import { quoteIdentifier } from '../database/sql-identifier.js';

/**
 * The sink's own dead letters (`onError: { deadLetterTable }`): a message that did not decode
 * or that the database refused for good, written in the transaction that moves the checkpoint
 * past it, so it is recorded exactly once.
 */
export class DeadLetterTable {
  private readonly table: string;

  constructor(name: string) {
    this.table = quoteIdentifier('onError.deadLetterTable', name, true);
  }

  async create(database: SinkDatabase): Promise<void> {
    await createIfMissing(database, (tx) =>
      tx.query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (sink text NOT NULL, stream text NOT NULL, ` +
          '"offset" bigint NOT NULL, stage text NOT NULL, error text NOT NULL, ' +
          'message bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), ' +
          'PRIMARY KEY (sink, stream, "offset"))',
      ),
    );
  }

  async insert(
    tx: SinkTransaction,
    sink: string,
    stream: string,
    message: RejectedMessage,
  ): Promise<void> {
    await tx.query(
      `INSERT INTO ${this.table} (sink, stream, "offset", stage, error, message) ` +
        'VALUES ($1, $2, $3, $4, $5, $6)',
      [
        sink,
        stream,
        message.offset.toString(),
        message.stage,
        message.error.message,
        Buffer.from(message.bytes),
      ],
    );
  }
}
