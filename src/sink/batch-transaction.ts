import { SinkError, type SinkStage } from '../common/errors.js';
import type { CheckpointTable } from './checkpoint-table.js';
import type { DeadLetterTable } from './dead-letter-table.js';
import type { SinkDatabase, SinkTransaction } from '../database/sink-database.js';
import type { SinkMessage, SinkShape } from './sink-shape.js';

/** A message the sink's `onError` dead-letters: it did not decode, or the database refused it. */
export interface RejectedMessage {
  readonly offset: bigint;
  readonly bytes: Uint8Array;
  readonly stage: SinkStage;
  readonly error: Error;
}

/** What one transaction did. */
export interface BatchOutcome {
  /** Messages applied, and those passed over as at or below the checkpoint. */
  readonly applied: number;
  readonly skipped: number;
  /** The dead letters it wrote (those past the checkpoint). */
  readonly deadLettered: readonly RejectedMessage[];
  /**
   * The checkpoint found under the lock, or `firstOffset - 1` where all that was found is that
   * it was below the batch (`CheckpointTable.claim`).
   */
  readonly checkpoint: bigint;
  readonly transactionMs: number;
}

/** What a batch's transaction needs to know of its sink. */
export interface BatchContext<V> {
  readonly sink: string;
  readonly database: SinkDatabase;
  readonly checkpoints: CheckpointTable;
  readonly shape: SinkShape<V>;
  /** The sink's `onError` table, when it has one. */
  readonly deadLetters: DeadLetterTable | undefined;
  readonly transactionTimeoutMs: number | undefined;
}

/** The transaction ran past the sink's `transactionTimeoutMs`. */
class TransactionOverdue extends Error {
  constructor(bound: number) {
    super(`the transaction ran longer than transactionTimeoutMs (${bound} ms) and was rolled back`);
  }
}

/** PostgreSQL's query_canceled: what a statement_timeout ends a statement with. */
const QUERY_CANCELED = '57014';

/**
 * Applies offsets `firstOffset`..`lastOffset` of `stream` in ONE transaction with the
 * checkpoint: the checkpoint row is locked and moved to `lastOffset` first (one statement
 * for a batch after it: `CheckpointTable.claim`), messages at or below the checkpoint it held
 * are passed over (another instance applied them), the rest applied. Throws a `SinkError` naming the range: nothing of it was applied.
 */
export async function applyBatch<V>(
  context: BatchContext<V>,
  stream: string,
  firstOffset: bigint,
  lastOffset: bigint,
  messages: readonly SinkMessage<V>[],
  rejected: readonly RejectedMessage[],
): Promise<BatchOutcome> {
  const { sink, database, checkpoints, shape, transactionTimeoutMs: bound } = context;
  const started = performance.now();
  let stage: SinkStage = 'checkpoint';
  try {
    const outcome = await database.transaction(async (raw) => {
      const tx = bound === undefined ? raw : bounded(raw, started, bound);
      // Where the server can, it cancels a statement that runs past the bound (57014).
      if (bound !== undefined) await tx.query(`SET LOCAL statement_timeout = ${bound}`);
      // No check that the batch starts at checkpoint + 1: offsets have gaps (RabbitMQ's
      // tracking chunks take one and are never delivered), and the source itself fails a read
      // that retention cut short (RetentionGapError).
      const checkpoint = await checkpoints.claim(tx, sink, stream, firstOffset, lastOffset);
      const fresh = messages.filter((m) => m.offset > checkpoint);
      const deadLettered = rejected.filter((m) => m.offset > checkpoint);
      const first = fresh[0];
      const last = fresh.at(-1);
      stage = 'apply';
      if (first !== undefined && last !== undefined) {
        await shape.apply(tx, {
          stream,
          firstOffset: first.offset,
          lastOffset: last.offset,
          messages: fresh,
        });
      }
      for (const message of deadLettered)
        await context.deadLetters?.insert(tx, sink, stream, message);
      stage = 'checkpoint'; // what fails from here on is the commit, which moves the checkpoint
      return {
        applied: fresh.length,
        skipped: messages.length + rejected.length - fresh.length - deadLettered.length,
        deadLettered,
        checkpoint,
      };
    });
    return { ...outcome, transactionMs: performance.now() - started };
  } catch (error) {
    // A 57014 is the sink's own statement_timeout only when it set one (it replaces the
    // pool's for the transaction); otherwise the pool's, or a pg_cancel_backend: permanent.
    const timedOut =
      error instanceof TransactionOverdue ||
      (bound !== undefined && (error as { code?: unknown } | null)?.code === QUERY_CANCELED);
    throw new SinkError(
      sink,
      stream,
      firstOffset,
      lastOffset,
      timedOut ? 'timeout' : stage,
      timedOut || database.isRetriable(error),
      error,
    );
  }
}

/**
 * `tx` whose statements each race the time left of `bound`: a statement still running when it
 * runs out (a server that stopped answering, whose `statement_timeout` cannot reach us) is
 * abandoned with `TransactionOverdue`, and the adapter, seeing it still under way, drops the
 * connection instead of waiting on it.
 */
function bounded(tx: SinkTransaction, started: number, bound: number): SinkTransaction {
  return {
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names its rows' type, as pg's query<R>
    async query<Row>(sql: string, params?: readonly unknown[]) {
      const left = bound - (performance.now() - started);
      if (left <= 0) throw new TransactionOverdue(bound);
      let timer: NodeJS.Timeout | undefined;
      const overdue = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TransactionOverdue(bound)), left);
      });
      try {
        return await Promise.race([tx.query<Row>(sql, params), overdue]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
