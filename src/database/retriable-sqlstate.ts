/**
 * Whether a PostgreSQL error code (SQLSTATE) says the same transaction may pass when run
 * again: a lost or refused connection (class 08), a serialization failure or deadlock (40001,
 * 40P01), the server shutting down or short of resources (57P01-57P03, class 53). Constraint
 * violations, syntax and schema errors are permanent: retrying would fail the same way.
 * One home for both adapters, since PGlite reports the same codes as PostgreSQL.
 */
export function isRetriableSqlState(code: unknown): boolean {
  if (typeof code !== 'string') return false;
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    code === '40001' ||
    code === '40P01' ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03'
  );
}
