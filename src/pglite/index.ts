// stream-windows/pglite: the database sink's embedded default, an in-process PostgreSQL
// (@electric-sql/pglite, an optional peer dependency): the same SQL as the real one, nothing
// to install. For demos and users' own tests; production uses 'stream-windows/postgres'.
import type { PGlite, Results } from '@electric-sql/pglite';
import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import { isRetriableSqlState } from '../database/retriable-sqlstate.js';

/**
 * A sink database over a PGlite instance. The instance stays the caller's: `close()` leaves it
 * open (close it yourself when done with it). A statement without parameters runs as one
 * simple query (PGlite's `exec`; a statement of several answers with the last one's rows).
 *
 * In memory (`new PGlite()`) nothing outlives the process. With a data directory on disk
 * (`new PGlite('./data')`) one process at a time may open it (PGlite takes no lock: two
 * processes corrupt it). A killed process loses nothing committed (tested: 21 SIGKILLs, the
 * tables exact), but PGlite runs PostgreSQL with fsync off, so a crash of the machine may lose
 * committed transactions: use `stream-windows/postgres` for data that must outlive it.
 */
export function pglite(db: PGlite): SinkDatabase {
  return {
    transaction: (work) =>
      db.transaction((tx) => {
        const statements: SinkTransaction = {
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its rows' type, as pg's query<R>
          query: async <Row>(sql: string, params?: readonly unknown[]) => {
            // Without parameters, one simple query (PGlite's exec) instead of the five protocol
            // steps of a prepared one; several statements answer with the last one's rows, as pg.
            const result =
              params === undefined || params.length === 0
                ? ((await tx.exec(sql)).at(-1) as Results<Row>)
                : await tx.query<Row>(sql, [...params]);
            // rowCount is the command tag's count, as pg reports it (affectedRows sums a script's).
            return { rows: result.rows, rowCount: result.rowCount ?? result.rows.length };
          },
        };
        return work(statements);
      }),
    isRetriable: (error) =>
      isRetriableSqlState((error as { code?: unknown } | null | undefined)?.code),
    close: () => Promise.resolve(),
  };
}
