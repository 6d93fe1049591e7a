/**
 * The writers of the outbox bench (bench/outbox.ts), run in a process of their own
 * (./outbox-writers-child.ts) so that the bench's CPU time is the relay's alone: `writers`
 * concurrent writers, one `pg` connection each, commit `rows` rows in all in transactions of
 * `rowsPerTransaction`, noting when each COMMIT was answered. A row's `bench-tx` header names
 * its transaction, so the bench can match each row it sees confirmed with its commit. Keys are
 * a writer's own (10 each): writers never wait on each other's key claims, as the plain loop's
 * writers never do.
 */
import pg from 'pg';
import { writeOutbox } from '../src/outbox/outbox-write.js';

/** What the bench asks: one round's writing, into the relay's outbox or the plain loop's table. */
export interface WriteRequest {
  readonly type: 'write';
  readonly kind: 'outbox' | 'plain';
  readonly table: string;
  readonly writers: number;
  readonly rowsPerTransaction: number;
  readonly rows: number;
}

/** What the writers answer: when they started, and each transaction's tag and commit time (epoch ms). */
export interface Written {
  readonly startedAt: number;
  readonly endedAt: number;
  readonly commits: readonly (readonly [tag: string, at: number])[];
}

/** Epoch milliseconds with the sub-millisecond precision both processes' clocks share. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

const KEYS_PER_WRITER = 10;

/** The most writers a request may ask for: the child's pool has this many connections. */
export const MAX_WRITERS = 8;

/** Runs one request's writers on `pool` (at least `request.writers` connections). */
export async function writeRows(pool: pg.Pool, request: WriteRequest): Promise<Written> {
  const { writers, rowsPerTransaction, rows } = request;
  const clients = await Promise.all(Array.from({ length: writers }, () => pool.connect()));
  const commits: [string, number][] = [];
  const startedAt = nowMs();
  try {
    await Promise.all(
      clients.map(async (client, writer) => {
        // The rows split as evenly as transactions allow: writer w takes every w-th transaction.
        const transactions = Math.ceil(rows / rowsPerTransaction);
        for (let t = writer; t < transactions; t += writers) {
          const tag = `${writer}-${t}`;
          const count = Math.min(rowsPerTransaction, rows - t * rowsPerTransaction);
          await client.query('BEGIN');
          for (let i = 0; i < count; i++) {
            const order = t * rowsPerTransaction + i;
            const key = `w${writer}-k${order % KEYS_PER_WRITER}`;
            const body = { order, key, cents: (order * 7919) % 100_000 };
            if (request.kind === 'outbox') {
              await writeOutbox(
                client,
                { key, json: body, headers: { 'bench-tx': tag } },
                { table: request.table },
              );
            } else {
              await client.query(
                `INSERT INTO ${request.table} (key, headers, content_type, body) ` +
                  "VALUES ($1, $2::jsonb, 'application/json', $3)",
                [key, JSON.stringify({ 'bench-tx': tag }), Buffer.from(JSON.stringify(body))],
              );
            }
          }
          await client.query('COMMIT');
          commits.push([tag, nowMs()]);
        }
      }),
    );
  } finally {
    for (const client of clients) client.release();
  }
  return { startedAt, endedAt: nowMs(), commits };
}
