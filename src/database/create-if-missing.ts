import type { SinkDatabase, SinkTransaction } from './sink-database.js';

/**
 * What PostgreSQL answers the second of two `CREATE ... IF NOT EXISTS` of one table run at
 * once (the check is not atomic): a duplicate row type (23505 in pg_type), a duplicate table
 * (42P07) or object (42710). Run again, the statement then finds the table.
 */
const CREATED_MEANWHILE = new Set(['23505', '42P07', '42710']);

/** Tries left after the first: each race lost means another creator finished one table. */
const RETRIES = 5;

/**
 * Runs `create` (statements of `CREATE ... IF NOT EXISTS`) in a transaction, again when a
 * concurrent creator (another sink instance, another partition) won a race to one of them.
 */
export async function createIfMissing(
  database: SinkDatabase,
  create: (tx: SinkTransaction) => Promise<unknown>,
): Promise<void> {
  for (let retries = 0; ; retries++) {
    try {
      await database.transaction(create);
      return;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (retries >= RETRIES || typeof code !== 'string' || !CREATED_MEANWHILE.has(code)) {
        throw error;
      }
    }
  }
}
