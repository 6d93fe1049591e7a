import type { SinkDatabase } from '../database/sink-database.js';
import { CheckpointDatabaseError } from './checkpoint-database-error.js';
import { UsageError } from './usage-error.js';

/** The PostgreSQL database `status --sink` reads a sink's checkpoints from. */
export interface CheckpointDatabase {
  readonly url: string;
  /** The URL without its password and parameters: what messages and the table name it by. */
  readonly label: string;
}

/** `text` (--database, or DATABASE_URL: `origin`) as a PostgreSQL URL; anything else is a usage error. */
export function checkpointDatabase(text: string, origin: string): CheckpointDatabase {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(
      `${origin} is not a URL such as postgres://user@host:port/database (with a password: user:password@host)`,
      'status',
    );
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new UsageError(
      `${origin} must be a postgres:// or postgresql:// URL, given ${url.protocol}//...`,
      'status',
    );
  }
  // Parameters may carry a password too (?password=): a message shows none of them.
  const label = new URL(text);
  label.password = '';
  label.search = '';
  label.hash = '';
  return { url: text, label: label.toString() };
}

/**
 * A port on `database` through 'stream-windows/postgres', loaded only now: `pg` is an optional
 * peer dependency, which a user of the command for jobs alone need not install. Its failures
 * (unreachable, refused, no checkpoint table `checkpointTable`) name the database, not its password.
 */
export async function openCheckpointDatabase(
  database: CheckpointDatabase,
  checkpointTable: string,
): Promise<SinkDatabase> {
  const postgres = await import('../postgres/index.js').then(
    (adapter) => adapter.postgres,
    (error: unknown) => {
      if (!isMissingPg(error)) throw error;
      throw new CheckpointDatabaseError(
        database.label,
        "status --sink reads the sink's checkpoints from PostgreSQL with the 'pg' package, " +
          'an optional peer dependency of stream-windows, which is not installed: npm install pg',
        error,
      );
    },
  );
  const port = postgres({
    connectionString: database.url,
    max: 1,
    // pg waits for ever by default: an address that drops packets would hang the command.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  const failure = (error: unknown): CheckpointDatabaseError =>
    new CheckpointDatabaseError(
      database.label,
      (error as { code?: unknown } | null)?.code === UNDEFINED_TABLE
        ? `database ${database.label} has no checkpoint table '${checkpointTable}': no sink ` +
            'has run on it, or the sink names another (--checkpoint-table)'
        : `could not read the checkpoints from database ${database.label}: ${causeOf(error)}`,
      error,
    );
  return {
    transaction: (work) =>
      port.transaction(work).catch((error: unknown) => Promise.reject(failure(error))),
    isRetriable: (error) => port.isRetriable(error),
    close: () => port.close(),
  };
}

/** How long connecting to the database may take, ms. */
const CONNECT_TIMEOUT_MS = 10_000;

/** SQLSTATE undefined_table. */
const UNDEFINED_TABLE = '42P01';

/** Whether loading the adapter failed because the `pg` package is not there. */
function isMissingPg(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes("'pg'");
}

/**
 * What went wrong, in words: a failed connect to a name with several addresses (localhost:
 * IPv6 and IPv4) is an AggregateError with no message of its own, only its attempts'.
 */
function causeOf(error: unknown): string {
  if (error instanceof AggregateError && error.message === '') {
    return error.errors.map(causeOf).join('; ');
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return error.message !== '' ? error.message : typeof code === 'string' ? code : error.name;
  }
  return String(error);
}
