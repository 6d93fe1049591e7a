/**
 * The database a sink writes to, as the sink sees it: transactions of parameterised SQL
 * (`$1`, `$2`, … as PostgreSQL numbers them). One port for every database the sink supports,
 * so the sink's rules are written once: `stream-windows/postgres` adapts a `pg` pool (the
 * real PostgreSQL), `stream-windows/pglite` an in-process PGlite (the same SQL, nothing to
 * install: for demos and users' own tests).
 */
export interface SinkDatabase {
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws
   * (the error is rethrown). A failure to commit is thrown too: then nothing of `work` holds.
   */
  transaction<T>(work: (tx: SinkTransaction) => Promise<T>): Promise<T>;
  /** Whether `error` (thrown by this database) may pass on retry: a lost connection, a deadlock, a serialization failure. */
  isRetriable(error: unknown): boolean;
  /** Releases what the adapter opened itself; one given to it by the user stays open. */
  close(): Promise<void>;
  /**
   * Tells `listener` of the errors the database raises outside any transaction (an idle
   * connection the server ended: a restart, `pg_terminate_backend`); returns the function that
   * stops telling it. Optional: a running sink logs them (warn).
   */
  onIdleError?(listener: (error: Error) => void): () => void;
}

/** The statements of one transaction. */
export interface SinkTransaction {
  /** Runs one SQL statement with `$1`, `$2`, ... `params`; resolves with its rows and row count. */
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its rows' type, as pg's query<R>
  query<Row = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<{ readonly rows: readonly Row[]; readonly rowCount: number }>;
}
