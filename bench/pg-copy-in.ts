import type { PoolClient } from 'pg';

/** What pg's client hands the query it runs (its connection, as far as COPY needs it). */
interface CopyConnection {
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/**
 * `COPY ... FROM STDIN` of `data` on a pg client: pg runs any object with `submit` as a query
 * and hands it the server's answers, which is how pg-copy-streams does it (not a dependency
 * here). The data goes in one CopyData message. An error rejects at once (the client sends
 * nothing more before the server's ReadyForQuery); success resolves at ReadyForQuery.
 */
export function copyIn(client: PoolClient, sql: string, data: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const query = {
      submit: (connection: CopyConnection) => connection.query(sql),
      handleCopyInResponse: (connection: CopyConnection) => {
        connection.sendCopyFromChunk(Buffer.from(data));
        connection.endCopyFrom();
      },
      handleError: (error: Error) => reject(error),
      handleReadyForQuery: () => resolve(),
      handleCommandComplete: () => undefined,
      handleRowDescription: () => undefined,
      handleDataRow: () => undefined,
      handleEmptyQuery: () => undefined,
      handlePortalSuspended: () => undefined,
      handleCopyData: () => undefined,
    };
    void client.query(query as never);
  });
}
