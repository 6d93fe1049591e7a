import { retryPolicy, runRetrying, type RetryPolicy } from '../common/retry-loop.js';
import { SingleRun } from '../common/single-run.js';
import { ConfigError, isRetriable, SinkError } from '../common/errors.js';
import { quoteLiteral } from '../database/sql-literal.js';
import { checkLogger, type Logger } from '../common/logger.js';
import { checkWarnAfterRetries, RetryWarning } from '../common/retry-warning.js';
import { timerMs } from '../common/timer-duration.js';
import { JobEvents, type ListenerOptions } from '../api/job-events.js';
import type { PartitionedSource, ReadStart, Source } from '../ports/ports.js';
import type { RunOptions } from '../api/run-options.js';
import {
  applyBatch,
  type BatchContext,
  type BatchOutcome,
  type RejectedMessage,
} from './batch-transaction.js';
import { readBatches, wholeStepRuns, type BatchLimits, type ReadMessage } from './batch-reader.js';
import { CheckpointTable, DEFAULT_CHECKPOINT_TABLE, resumePoint } from './checkpoint-table.js';
import { readSinkCheckpoints } from './sink-checkpoints.js';
import type { SinkDatabase } from '../database/sink-database.js';
import type { SinkEventMap } from './sink-events.js';
import type { SinkMessage, SinkShape } from './sink-shape.js';
import { DeadLetterTable } from './dead-letter-table.js';
import { createIfMissing } from '../database/create-if-missing.js';

/** The options of `databaseSink`: its name, source, database, shape and batching. */
export interface DatabaseSinkOptions<V> {
  /**
   * The sink's name: its checkpoint rows are (name, stream). Stable across restarts; two
   * instances with one name share the checkpoint, and apply each message once between them.
   */
  readonly name: string;
  /** What it reads: one stream, or a super stream's partitions (one checkpoint per partition). */
  readonly source: Source | PartitionedSource;
  /** Where it applies batches: `postgres(pool)` or `pglite(db)` (or a `SinkDatabase` of your own). */
  readonly database: SinkDatabase;
  /** What it does with each batch: `eachBatch`, `windowOutputs`, `latestState`, `processedIds`. */
  readonly into: SinkShape<V>;
  /**
   * Messages per transaction at most (default 500); reading a job's results, a transaction
   * holding a step of several messages ends past it when the step's remaining parts take it
   * there (a step is never split).
   */
  readonly maxBatchMessages?: number;
  /**
   * How long a batch waits for more messages after its first, ms (default 100; 0 applies what
   * each chunk brings at once); reading a job's results, a batch holding part of a step keeps
   * waiting past it for the step's remaining parts, reading on.
   */
  readonly maxBatchDelayMs?: number;
  /** The checkpoint table, created when missing (default 'stream_windows_checkpoints'). */
  readonly checkpointTable?: string;
  /**
   * A bound on one batch's transaction, ms: past it the transaction is rolled back (and
   * PostgreSQL's `statement_timeout` set to it cancels a statement that hangs) and retried as
   * a retriable `SinkError` at stage 'timeout'. Default: none.
   */
  readonly transactionTimeoutMs?: number;
  /** Delay before resuming after a retriable error, doubled each time up to `maxRetryDelayMs` (defaults 100 and 10,000). */
  readonly retryDelayMs?: number;
  /** The longest delay between two retries, default 10,000 ms (see `retryDelayMs`). */
  readonly maxRetryDelayMs?: number;
  /**
   * Retriable errors in a row (without a commit between) before the sink stops with a
   * `SinkError` at stage 'retries' (default Infinity: a database that comes back is waited for).
   */
  readonly maxRetries?: number;
  /**
   * Retriable errors in a row on one stream, with no batch committed between them, before the
   * sink warns that it is retrying and getting nowhere (default 5: about 3 s at the default
   * delays). The warning names the sink, the stream, the count, how long and the last cause,
   * comes again at twice as many retries, then four times, and is followed by one line when the
   * sink recovers. It goes to `logger` at warn, or to stderr when no logger is given; `Infinity`
   * silences it.
   */
  readonly warnAfterRetries?: number;
  /**
   * A message that does not decode, or that the database refuses for good (a constraint, a
   * column that does not match): 'stop' (default) stops the sink with a `SinkError`, nothing of
   * its batch applied; `{ deadLetterTable }` writes it to that table (created when missing:
   * sink, stream, offset, stage, error, message bytea) in the transaction that moves the
   * checkpoint past it, and applies the rest of its batch.
   */
  readonly onError?: 'stop' | { readonly deadLetterTable: string };
  /**
   * Where the sink logs its retries, its stop and the idle connections the database ended
   * (pino's shape); default silent.
   */
  readonly logger?: Logger;
}

/** What a database sink did in one `run()`: messages applied, skipped and dead-lettered. */
export interface SinkRunSummary {
  /** Messages applied by this instance. */
  readonly applied: number;
  /** Messages passed over as already applied (at or below the checkpoint: another instance's). */
  readonly skipped: number;
  /** Messages written to the dead-letter table. */
  readonly deadLettered: number;
  /** Transactions committed. */
  readonly transactions: number;
  /** Retriable errors the sink resumed after. */
  readonly retries: number;
}

/** Where a sink stands on one stream (a partition of a super stream). */
export interface SinkPosition {
  /** The stream (a partition's, for a super stream). */
  readonly stream: string;
  /** The last offset applied; -1 when nothing was. */
  readonly checkpoint: bigint;
  /** Offset one past the stream's last message. */
  readonly endOffset: bigint;
  /** Messages not applied yet: `endOffset - checkpoint - 1` (from offset 0 when nothing was applied). */
  readonly lag: bigint;
}

type Counters = { -readonly [K in keyof SinkRunSummary]: SinkRunSummary[K] };

/**
 * Reads a stream (or each partition of a super stream) and applies its messages to a database
 * in batches, each batch in ONE transaction with the sink's checkpoint: effectively once into
 * the database. See the README's "Into a database".
 */
export function databaseSink<V>(options: DatabaseSinkOptions<V>): DatabaseSink<V> {
  return new DatabaseSink(options);
}

/** A stream applied to a database, each batch in one transaction with the sink's checkpoint (made by `databaseSink`). */
export class DatabaseSink<V> {
  /** The sink's name, as `options.name`: its checkpoint rows are (name, stream). */
  readonly name: string;
  private readonly events: JobEvents<SinkEventMap>;
  private readonly logger: Logger;
  private readonly context: BatchContext<V>;
  private readonly limits: BatchLimits;
  private readonly retries: RetryPolicy;
  private readonly warnAfterRetries: number;
  private readonly runs: SingleRun;
  private transactions = 0;

  constructor(private readonly options: DatabaseSinkOptions<V>) {
    const { name, source, database, into } = options;
    if (typeof name !== 'string' || name === '') {
      throw new ConfigError('name', 'must be a non-empty string', name);
    }
    quoteLiteral('name', name); // its checkpoint rows are claimed with the name as a literal
    this.name = name;
    this.runs = new SingleRun('sink', name);
    if (
      typeof (source as Partial<Source> | undefined)?.read !== 'function' &&
      typeof (source as Partial<PartitionedSource> | undefined)?.partitions !== 'function'
    ) {
      throw new ConfigError('source', 'must be a Source or a PartitionedSource', source);
    }
    if (typeof (database as Partial<SinkDatabase> | undefined)?.transaction !== 'function') {
      throw new ConfigError(
        'database',
        'must be a SinkDatabase (pglite(db), postgres(pool))',
        database,
      );
    }
    if (
      typeof (into as Partial<typeof into> | undefined)?.decode !== 'function' ||
      typeof into.apply !== 'function'
    ) {
      throw new ConfigError('into', 'must be a sink shape (eachBatch, windowOutputs, ...)', into);
    }
    const maxMessages = options.maxBatchMessages ?? 500;
    if (!Number.isSafeInteger(maxMessages) || maxMessages < 1) {
      throw new ConfigError('maxBatchMessages', 'must be an integer >= 1', maxMessages);
    }
    this.limits = {
      maxMessages,
      maxDelayMs: timerMs('maxBatchDelayMs', options.maxBatchDelayMs ?? 100, true),
      wholeSteps: into.readsResults === true,
    };
    this.retries = retryPolicy(options);
    this.warnAfterRetries = checkWarnAfterRetries(options.warnAfterRetries);
    const bound = options.transactionTimeoutMs;
    const onError = options.onError ?? 'stop';
    if (onError !== 'stop' && typeof onError.deadLetterTable !== 'string') {
      throw new ConfigError('onError', "must be 'stop' or { deadLetterTable: 'table' }", onError);
    }
    this.logger = checkLogger('logger', options.logger);
    this.events = new JobEvents<SinkEventMap>((event, error) =>
      this.logger.error({ err: error, event }, `a listener of the sink's '${event}' event threw`),
    );
    this.context = {
      sink: name,
      database,
      checkpoints: new CheckpointTable(options.checkpointTable ?? DEFAULT_CHECKPOINT_TABLE),
      shape: into,
      transactionTimeoutMs:
        bound === undefined ? undefined : timerMs('transactionTimeoutMs', bound),
      deadLetters: onError === 'stop' ? undefined : new DeadLetterTable(onError.deadLetterTable),
    };
  }

  /** Adds a listener of the sink's events (see `SinkEventMap`); returns the function that removes it. */
  on<K extends keyof SinkEventMap>(
    name: K,
    listener: (event: SinkEventMap[K]) => void,
    options?: ListenerOptions,
  ): () => void {
    return this.events.on(name, listener, options);
  }

  /** Transactions under way (one at most per stream). */
  get inFlight(): number {
    return this.transactions;
  }

  /**
   * The checkpoint, end offset and lag of each stream the sink reads, read now from the
   * database and the broker: for a dashboard, a metric or an operator.
   */
  async positions(): Promise<SinkPosition[]> {
    const { database, checkpoints } = this.context;
    await checkpoints.create(database);
    const sources = await this.streams();
    const [stored, ends] = await Promise.all([
      readSinkCheckpoints(
        database,
        this.name,
        sources.map((source) => source.stream),
        this.options.checkpointTable,
      ),
      Promise.all(sources.map((source) => source.endOffset())),
    ]);
    return stored.map(({ stream, checkpoint }, i) => {
      const endOffset = ends[i] as bigint;
      const lag = endOffset - checkpoint - 1n;
      return { stream, checkpoint, endOffset, lag: lag < 0n ? 0n : lag };
    });
  }

  /**
   * Applies the stream from the checkpoint until `signal` aborts (or, with `untilCaughtUp`,
   * until what the stream held at the start is applied). Retriable errors are retried from the
   * checkpoint; a permanent one stops every partition and is thrown (a `SinkError` naming
   * stream, offsets and cause). A batch whose transaction had not committed is read again on
   * the next start: nothing is applied twice, nothing skipped.
   */
  run(options: RunOptions = {}): Promise<SinkRunSummary> {
    return this.runs.start(() => this.runAll(options));
  }

  /**
   * Stops a run under way (as its signal would), waits for it up to 5 s, and closes
   * the database port: a transaction still under way then (a server that stopped answering)
   * loses its connection, nothing of it committed, and the run ends.
   */
  async close(): Promise<void> {
    await this.runs.close();
    await this.options.database.close();
  }

  private async runAll(options: RunOptions): Promise<SinkRunSummary> {
    const counters: Counters = {
      applied: 0,
      skipped: 0,
      deadLettered: 0,
      transactions: 0,
      retries: 0,
    };
    const stop = new AbortController();
    const signal = this.runs.signalWith(stop.signal, options.signal);
    let failure: unknown;
    const stopHearing = this.options.database.onIdleError?.((error) => {
      this.logger.warn(
        { err: error, sink: this.name },
        `sink '${this.name}': the database ended an idle connection; the next transaction connects anew`,
      );
    });
    try {
      const sources = await this.streams();
      const tables = this.tablesOnce();
      const ends = await Promise.allSettled(
        sources.map((s) =>
          this.runStream(s, signal, options.untilCaughtUp === true, counters, tables).catch(
            (error: unknown) => {
              stop.abort(); // one partition's permanent error stops the others
              throw error;
            },
          ),
        ),
      );
      const failed = ends.find((end) => end.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      return { ...counters };
    } catch (error) {
      failure = error;
      this.logger.error({ err: error, sink: this.name }, `sink '${this.name}' stopped on an error`);
      throw error;
    } finally {
      stopHearing?.();
      // A super stream's consumer groups are left whatever ended the run (a partitioned job's
      // rule): a stopped instance must not stay a member the broker could activate.
      const { source } = this.options;
      if ('partitions' in source) {
        await source.close().catch((error: unknown) => {
          this.logger.warn(
            { err: error, sink: this.name },
            "leaving the super stream's groups failed",
          );
        });
      }
      this.events.emit('stopped', { summary: { ...counters }, error: failure });
    }
  }

  /** The streams read: the source, or each partition of a super stream. */
  private async streams(): Promise<readonly Source[]> {
    const { source } = this.options;
    return 'partitions' in source ? source.partitions() : [source];
  }

  /**
   * Creates the sink's tables once per run, for all its streams at once: PostgreSQL may refuse
   * one of two concurrent `CREATE TABLE IF NOT EXISTS` of one table. After a failure the next
   * call (a retry) tries again.
   */
  private tablesOnce(): () => Promise<void> {
    let creating: Promise<void> | undefined;
    return () => {
      creating ??= this.createTables().catch((error: unknown) => {
        creating = undefined;
        throw error;
      });
      return creating;
    };
  }

  private async createTables(): Promise<void> {
    const { database, checkpoints, shape, deadLetters } = this.context;
    try {
      await checkpoints.create(database);
      await deadLetters?.create(database);
      const prepare = shape.prepare?.bind(shape);
      if (prepare !== undefined) await createIfMissing(database, (tx) => prepare(tx));
    } catch (error) {
      const { source } = this.options;
      const stream = 'partitions' in source ? source.superStream : source.stream;
      throw new SinkError(this.name, stream, 0n, 0n, 'prepare', database.isRetriable(error), error);
    }
  }

  /** One stream's loop: resumes from the checkpoint after each retriable error, with backoff. */
  private async runStream(
    source: Source,
    signal: AbortSignal,
    untilCaughtUp: boolean,
    counters: Counters,
    tables: () => Promise<void>,
  ): Promise<void> {
    const position = { next: 0n };
    await runRetrying(
      {
        policy: this.retries,
        signal,
        warning: new RetryWarning({
          logger: this.logger,
          warnAfter: this.warnAfterRetries,
          subject: `sink '${this.name}' on '${source.stream}'`,
          fields: { sink: this.name, stream: source.stream },
        }),
        retriable: (error) =>
          (error instanceof SinkError && error.retriable) ||
          (!(error instanceof SinkError) &&
            (isRetriable(error) || this.options.database.isRetriable(error))),
        exhausted: (error) => {
          // Always a SinkError, also after a source's error: where it stood, and what failed.
          const [first, last] =
            error instanceof SinkError
              ? [error.firstOffset, error.lastOffset]
              : [position.next, position.next];
          return new SinkError(this.name, source.stream, first, last, 'retries', false, error);
        },
        retrying: (error, delayMs) => {
          counters.retries++;
          const cause = error instanceof Error ? error : new Error(String(error));
          this.events.emit('retry', { error: cause, delayMs, retries: counters.retries });
          this.logger.warn(
            { err: error, sink: this.name, stream: source.stream, delayMs },
            `sink '${this.name}' resumes from its checkpoint on '${source.stream}' in ${delayMs} ms`,
          );
        },
      },
      async (progressed) => {
        await tables();
        await this.streamFromCheckpoint(
          source,
          signal,
          untilCaughtUp,
          counters,
          position,
          progressed,
        );
      },
    );
  }

  private async streamFromCheckpoint(
    source: Source,
    signal: AbortSignal,
    untilCaughtUp: boolean,
    counters: Counters,
    position: { next: bigint },
    committed: () => void,
  ): Promise<void> {
    const { database, checkpoints } = this.context;
    const stream = source.stream;
    // Asked when reading may begin: at once, or for a single active consumer source once the
    // broker activates this instance, by when another one may have moved the checkpoint.
    const resume = async (): Promise<bigint | 'first'> => {
      const checkpoint = await checkpoints.stored(database, this.name, stream);
      const from = resumePoint(checkpoint);
      position.next = checkpoint + 1n;
      this.events.emit('started', { stream, checkpoint, from, retries: counters.retries });
      this.logger.info(
        { sink: this.name, stream, checkpoint: checkpoint.toString() },
        `sink '${this.name}' reads '${stream}' from ` +
          (from === 'first' ? 'its first offset' : `offset ${from}`),
      );
      return from;
    };
    let from: ReadStart = resume;
    let end: bigint | undefined;
    if (untilCaughtUp) {
      end = await source.endOffset();
      const start = await resume();
      from = start;
      if (end === 0n || (typeof start === 'bigint' && start >= end)) {
        this.events.emit('caughtUp', { stream, offset: end });
        return;
      }
    }
    for await (const batch of readBatches(source, from, signal, this.limits, end)) {
      if (signal.aborted) return;
      await this.apply(stream, batch, counters);
      position.next = (batch.at(-1) as ReadMessage).offset + 1n;
      committed();
    }
    if (end !== undefined && !signal.aborted) {
      this.events.emit('caughtUp', { stream, offset: end });
    }
  }

  /**
   * Applies one batch; with a dead-letter table, a batch the database refused for one
   * message's data is applied message by message, to find and dead-letter that message. The
   * messages of a step of several (a job's results) and those between them go together: all
   * applied, or all dead-lettered.
   */
  private async apply(
    stream: string,
    batch: readonly ReadMessage[],
    counters: Counters,
  ): Promise<void> {
    try {
      await this.applyDecoded(stream, batch, counters);
    } catch (error) {
      if (
        this.context.deadLetters === undefined ||
        !(error instanceof SinkError && refusesOneMessage(error))
      ) {
        throw error;
      }
      for (const run of wholeStepRuns(batch)) {
        try {
          await this.applyDecoded(stream, run, counters);
        } catch (single) {
          if (!(single instanceof SinkError && refusesOneMessage(single))) throw single;
          const rejected = run.map((message) => rejection(message, single.stage, single.cause));
          await this.transaction(stream, run, [], rejected, counters);
        }
      }
    }
  }

  private async applyDecoded(
    stream: string,
    batch: readonly ReadMessage[],
    counters: Counters,
  ): Promise<void> {
    const messages: SinkMessage<V>[] = [];
    const rejected: RejectedMessage[] = [];
    // A run of messages that go together (see `wholeStepRuns`) ends after each `stepsWhole`.
    let runStart = 0;
    let decodedBefore = 0;
    let refused: { readonly message: ReadMessage; readonly cause: unknown } | undefined;
    for (const [index, message] of batch.entries()) {
      if (refused === undefined) {
        try {
          messages.push({
            offset: message.offset,
            timestamp: message.timestamp,
            value: this.context.shape.decode(message.bytes),
          });
        } catch (cause) {
          if (this.context.deadLetters === undefined) {
            throw new SinkError(
              this.name,
              stream,
              message.offset,
              message.offset,
              'decode',
              false,
              cause,
            );
          }
          refused = { message, cause };
        }
      }
      if (!message.stepsWhole && index < batch.length - 1) continue;
      if (refused !== undefined) {
        // A part of a step that does not decode: the step goes to the dead letters whole.
        messages.length = decodedBefore;
        const failed = refused;
        for (const member of batch.slice(runStart, index + 1)) {
          rejected.push(stepRejection(member, failed));
        }
        refused = undefined;
      }
      runStart = index + 1;
      decodedBefore = messages.length;
    }
    await this.transaction(stream, batch, messages, rejected, counters);
  }

  private async transaction(
    stream: string,
    batch: readonly ReadMessage[],
    messages: readonly SinkMessage<V>[],
    rejected: readonly RejectedMessage[],
    counters: Counters,
  ): Promise<void> {
    const firstOffset = (batch[0] as ReadMessage).offset;
    const lastOffset = (batch.at(-1) as ReadMessage).offset;
    let outcome: BatchOutcome;
    this.transactions++;
    try {
      outcome = await applyBatch(this.context, stream, firstOffset, lastOffset, messages, rejected);
    } finally {
      this.transactions--;
    }
    counters.transactions++;
    counters.applied += outcome.applied;
    counters.skipped += outcome.skipped;
    counters.deadLettered += outcome.deadLettered.length;
    for (const message of outcome.deadLettered) {
      this.events.emit('deadLettered', { stream, offset: message.offset, error: message.error });
    }
    if (outcome.checkpoint >= lastOffset) {
      this.events.emit('skipped', {
        stream,
        firstOffset,
        lastOffset,
        messages: outcome.skipped,
        checkpoint: outcome.checkpoint,
      });
    } else {
      this.events.emit('applied', {
        stream,
        firstOffset,
        lastOffset,
        messages: outcome.applied,
        skipped: outcome.skipped,
        transactionMs: outcome.transactionMs,
      });
    }
  }
}

/**
 * Whether the database refused a batch for what a message holds (SQLSTATE class 22, data
 * exception, or 23, integrity constraint): that message can be dead-lettered. Anything else (a
 * missing table or column, a permission, an error without a SQLSTATE) would fail every
 * message alike and stops the sink, rather than empty the stream into the dead-letter table.
 */
function refusesOneMessage(error: SinkError): boolean {
  const code = (error.cause as { code?: unknown } | null)?.code;
  return (
    error.stage === 'apply' &&
    !error.retriable &&
    typeof code === 'string' &&
    (code.startsWith('22') || code.startsWith('23'))
  );
}

function rejection(
  message: ReadMessage,
  stage: RejectedMessage['stage'],
  cause: unknown,
): RejectedMessage {
  return {
    offset: message.offset,
    bytes: message.bytes,
    stage,
    error: cause instanceof Error ? cause : new Error(String(cause)),
  };
}

/**
 * The dead letter of `message`, dead-lettered with the run of messages it shares with
 * `refused`, the message that did not decode (see `wholeStepRuns`): `refused`'s own error, or
 * one naming it.
 */
function stepRejection(
  message: ReadMessage,
  refused: { readonly message: ReadMessage; readonly cause: unknown },
): RejectedMessage {
  if (message === refused.message) return rejection(message, 'decode', refused.cause);
  const why = refused.cause instanceof Error ? refused.cause.message : String(refused.cause);
  return rejection(
    message,
    'decode',
    new Error(
      `dead-lettered with the message at offset ${refused.message.offset}, which did not ` +
        `decode (${why}): the messages of a step of results, and any between them, are ` +
        'applied together or not at all',
    ),
  );
}
