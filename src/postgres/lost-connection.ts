/**
 * Whether `error` is node-postgres losing, or failing to make, its connection: the same
 * transaction may pass on a new one. These carry no SQLSTATE (the server sent none), so
 * src/sink/retriable-sqlstate.ts cannot see them. What pg 8 throws, measured against
 * PostgreSQL 17 (test/integration/postgres-connection.test.ts):
 * - a socket error, with Node's code: `ECONNREFUSED` (server down), `ECONNRESET` (connection
 *   reset mid-statement); the other codes below are the same failures on other routes;
 * - its own messages: `Connection terminated unexpectedly` (the server closed the connection,
 *   e.g. after ending the session with 57P01), `Client has encountered a connection error and
 *   is not queryable` (a statement on a client whose connection broke before),
 *   `Connection terminated due to connection timeout` (the pool's `connectionTimeoutMillis`
 *   passed while connecting), `timeout exceeded when trying to connect` (no client of the pool
 *   became free within `connectionTimeoutMillis`), `Query read timeout` (the pool's
 *   `query_timeout` passed with no answer: the server may be gone; the client is dropped).
 */
export function isLostConnection(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (typeof code === 'string' && SOCKET_CODES.has(code)) || PG_MESSAGES.has(error.message);
}

const SOCKET_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

const PG_MESSAGES: ReadonlySet<string> = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Query read timeout',
]);
