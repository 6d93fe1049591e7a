import { describe, StreamWindowsError } from '../common/errors.js';
import type { SinkDatabase } from '../database/sink-database.js';
import { quoteIdentifier } from '../database/sql-identifier.js';
import { requiredOption, type OptionValues } from './command.js';
import { StatusDatabaseError } from './status-database-error.js';
import { UsageError } from './usage-error.js';

/** The PostgreSQL database `status --sink` or `status --relay` reads from. */
export interface StatusDatabase {
  readonly url: string;
  /** The URL without its password and parameters: what messages and the table name it by. */
  readonly label: string;
}

/** What a status command reads from its database, in the words of its messages. */
export interface StatusReading {
  /** The command: 'status --sink'. */
  readonly command: string;
  /** What it reads, whose: "the sink's checkpoints". */
  readonly reads: string;
  /** What it failed to read: "the checkpoints". */
  readonly what: string;
  /** Why its table is missing, after "database D has no ": "checkpoint table 'T': no sink ...". */
  readonly noTable: string;
}

/**
 * --database, else DATABASE_URL: one of them is needed. `reading` names the command and what
 * the database holds for it ("the sink's checkpoints"), in the usage error without either.
 */
export function databaseOption(
  values: OptionValues,
  env: NodeJS.ProcessEnv,
  reading: Pick<StatusReading, 'command' | 'reads'>,
): StatusDatabase {
  if (values['database'] !== undefined) {
    return statusDatabase(requiredOption(values, 'database', 'status'), '--database');
  }
  const fromEnv = env.DATABASE_URL;
  if (fromEnv === undefined || fromEnv === '') {
    throw new UsageError(
      `${reading.command} needs --database postgres://... or DATABASE_URL set: the database ` +
        `holding ${reading.reads}`,
      'status',
    );
  }
  return statusDatabase(fromEnv, 'DATABASE_URL');
}

/** The table option `--<option>`, checked as the library checks a table name; else `fallback`. */
export function tableOption(values: OptionValues, option: string, fallback: string): string {
  if (values[option] === undefined) return fallback;
  const table = requiredOption(values, option, 'status');
  try {
    quoteIdentifier(`--${option}`, table, true);
  } catch (error) {
    throw new UsageError(describe(error), 'status');
  }
  return table;
}

/** `text` (--database, or DATABASE_URL: `origin`) as a PostgreSQL URL; anything else is a usage error. */
export function statusDatabase(text: string, origin: string): StatusDatabase {
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
 * (unreachable, refused, no table) name the database, not its password, in `reading`'s words;
 * the library's own errors (a relay's row not in its table) pass as they are.
 */
export async function openStatusDatabase(
  database: StatusDatabase,
  reading: StatusReading,
): Promise<SinkDatabase> {
  const postgres = await import('../postgres/index.js').then(
    (adapter) => adapter.postgres,
    (error: unknown) => {
      if (!isMissingPg(error)) throw error;
      throw new StatusDatabaseError(
        database.label,
        `${reading.command} reads ${reading.reads} from PostgreSQL with the 'pg' package, ` +
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
  const failure = (error: unknown): Error =>
    error instanceof StreamWindowsError
      ? error
      : new StatusDatabaseError(
          database.label,
          (error as { code?: unknown } | null)?.code === UNDEFINED_TABLE
            ? `database ${database.label} has no ${reading.noTable}`
            : `could not read ${reading.what} from database ${database.label}: ${causeOf(error)}`,
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
