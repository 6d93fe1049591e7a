/**
 * The outbox bench's writers in their own process, forked by bench/outbox.ts with the
 * database's URL in POSTGRES_URL (not an argument: `ps` would show its password). It says
 * `{ ready }`, then answers each `write` request (./outbox-writers.ts) with `{ written }` or
 * `{ error }` (no password in it), and ends on `{ type: 'exit' }`.
 */
import pg from 'pg';
import { redactSecrets } from '../src/common/redact-secrets.js';
import { MAX_WRITERS, writeRows, type WriteRequest } from './outbox-writers.js';

const pool = new pg.Pool({ connectionString: process.env.POSTGRES_URL, max: MAX_WRITERS });
const reply = (message: unknown): void => void process.send?.(message);
process.on('message', (message: WriteRequest | { type: 'exit' }) => {
  if (message.type === 'exit') {
    void pool.end().then(() => process.disconnect());
    return;
  }
  writeRows(pool, message).then(
    (written) => reply({ written }),
    (error: unknown) =>
      reply({
        error: redactSecrets(
          error instanceof Error ? (error.stack ?? error.message) : String(error),
        ),
      }),
  );
});
reply({ ready: true });
