/**
 * The outbox bench's writers in their own process: `outbox-writers-child.ts POSTGRES_URL`,
 * forked by bench/outbox.ts. It says `{ ready }`, then answers each `write` request
 * (./outbox-writers.ts) with `{ written }` or `{ error }`, and ends on `{ type: 'exit' }`.
 */
import pg from 'pg';
import { MAX_WRITERS, writeRows, type WriteRequest } from './outbox-writers.js';

const pool = new pg.Pool({ connectionString: process.argv[2], max: MAX_WRITERS });
const reply = (message: unknown): void => void process.send?.(message);
process.on('message', (message: WriteRequest | { type: 'exit' }) => {
  if (message.type === 'exit') {
    void pool.end().then(() => process.disconnect());
    return;
  }
  writeRows(pool, message).then(
    (written) => reply({ written }),
    (error: unknown) =>
      reply({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
reply({ ready: true });
