import { ConfigError, isRetriable, RelayError, type RelayStage } from '../common/errors.js';
import { checkLogger, type Logger } from '../common/logger.js';
import { checkWarnAfterRetries, RetryWarning } from '../common/retry-warning.js';
import { timerMs } from '../common/timer-duration.js';
import { sleep } from '../common/waits.js';
import { retryPolicy, runRetrying, type RetryPolicy } from '../common/retry-loop.js';
import { SingleRun } from '../common/single-run.js';
import { JobEvents, type ListenerOptions } from '../api/job-events.js';
import type { RunOptions } from '../api/run-options.js';
import type { SinkDatabase } from '../database/sink-database.js';
import type { Target } from '../ports/ports.js';
import type { ProducerTarget } from '../producer/stream-producer.js';
import { plainEntriesFit } from '../ports/write-size.js';
import { outboxMessage } from './outbox-message.js';
import { OutboxTable, type OutboxCursor, type OutboxRecord } from './outbox-table.js';
import {
  MAX_RELAY_TXID,
  MAX_ROWS_PER_TRANSACTION,
  readRelayPublishingId,
  relayPublishingId,
} from './relay-publishing-id.js';
import type { RelayEventMap, RelayRunSummary } from './relay-events.js';

/** What a relay publishes through: a broker connection that makes named-producer targets (`connect()`'s, or the embedded broker). */
export interface RelayBroker {
  /** The target of `stream` under the named producer `options.producer`. */
  target(stream: string, options: { producer: string }): RelayTarget;
}

/** A target as a relay uses it: several rows, each under its own id, in one frame where it can. */
export type RelayTarget = Target & Partial<Pick<ProducerTarget, 'publishEach'>>;

/** The options of `outboxRelay`. */
export interface OutboxRelayOptions {
  /**
   * The relay's name: its producer's on the stream, which the broker deduplicates on and whose
   * last publishing id is where the relay resumes. Stable across restarts; two relays of one
   * name at once publish each row once between them.
   */
  readonly name: string;
  /** The database holding the outbox: `postgres(pool)` or `pglite(db)`. */
  readonly database: SinkDatabase;
  /** The outbox table, created when missing (default 'stream_windows_outbox'). */
  readonly table?: string;
  /** The broker to publish on: `await connect(url)` or a `MemoryBroker`. */
  readonly broker: RelayBroker;
  /** The stream to publish to. */
  readonly to: string;
  /** Rows read from the outbox at a time (default 500). */
  readonly maxBatchRows?: number;
  /** How long the relay waits before reading again when it found nothing to publish, ms (default 100). */
  readonly pollIntervalMs?: number;
  /** Delay before resuming after a retriable error, doubled each time up to `maxRetryDelayMs` (defaults 100 and 10,000). */
  readonly retryDelayMs?: number;
  /** The longest delay between two retries, default 10,000 ms. */
  readonly maxRetryDelayMs?: number;
  /** Retriable errors in a row before the relay stops with a `RelayError` at stage 'retries' (default Infinity). */
  readonly maxRetries?: number;
  /** Retriable errors in a row before it warns that it gets nowhere (default 5; Infinity: never), as a job does. */
  readonly warnAfterRetries?: number;
  /** Where the relay logs (pino's shape); default silent, but for the retry warning on stderr. */
  readonly logger?: Logger;
}

/** Where a relay stands, read now from the broker and the database. */
export interface RelayBacklog {
  /** The stream the relay publishes to. */
  readonly stream: string;
  /** The producer's last publishing id on the stream (0: nothing published). */
  readonly lastPublishingId: bigint;
  /** The last row the stream holds; undefined when none. */
  readonly position: OutboxCursor | undefined;
  /** Committed rows not on the stream yet. */
  readonly rows: bigint;
  /** The event-time age of the oldest of them, ms; undefined when there is none. */
  readonly oldestAgeMs: number | undefined;
}

type Counters = { -readonly [K in keyof RelayRunSummary]: RelayRunSummary[K] };

/** Rows per Publish frame at most: the broker target's default bound on writes in flight. */
const ROWS_PER_FRAME = 64;

/**
 * Publishes the rows services commit to an outbox table to a stream, each exactly once, the
 * rows of one key in their commit order. See the README's "From a database into a stream".
 */
export function outboxRelay(options: OutboxRelayOptions): OutboxRelay {
  return new OutboxRelay(options);
}

/**
 * An outbox relay (made by `outboxRelay`). It publishes committed rows in the order of their
 * transaction id, then row id, each under a publishing id derived from that place
 * (./relay-publishing-id.ts), and passes a row only once every older transaction has ended.
 * Where it stands is the producer's last publishing id on the stream: nothing is written back
 * to the database, so a crash anywhere loses no row and duplicates none.
 */
export class OutboxRelay {
  /** The relay's name (its producer's). */
  readonly name: string;
  /** The stream it publishes to. */
  readonly stream: string;
  private readonly table: OutboxTable;
  private readonly target: RelayTarget;
  private readonly events: JobEvents<RelayEventMap>;
  private readonly logger: Logger;
  private readonly maxBatchRows: number;
  private readonly pollIntervalMs: number;
  private readonly retries: RetryPolicy;
  private readonly warnAfterRetries: number;
  private readonly runs: SingleRun;
  private unconfirmed = 0;
  private created: Promise<void> | undefined;

  constructor(private readonly options: OutboxRelayOptions) {
    const { name, database, broker, to } = options;
    if (typeof name !== 'string' || name === '') {
      throw new ConfigError('name', 'must be a non-empty string', name);
    }
    if (typeof (database as Partial<SinkDatabase> | undefined)?.transaction !== 'function') {
      throw new ConfigError(
        'database',
        'must be a database (pglite(db), postgres(pool))',
        database,
      );
    }
    if (typeof (broker as Partial<RelayBroker> | undefined)?.target !== 'function') {
      throw new ConfigError('broker', 'must be a broker connection or a MemoryBroker', broker);
    }
    if (typeof to !== 'string' || to === '') {
      throw new ConfigError('to', 'must be a non-empty stream name', to);
    }
    this.name = name;
    this.runs = new SingleRun('relay', name);
    this.stream = to;
    this.table = new OutboxTable(options.table);
    const maxBatchRows = options.maxBatchRows ?? 500;
    if (!Number.isSafeInteger(maxBatchRows) || maxBatchRows < 1) {
      throw new ConfigError('maxBatchRows', 'must be an integer >= 1', maxBatchRows);
    }
    this.maxBatchRows = maxBatchRows;
    this.pollIntervalMs = timerMs('pollIntervalMs', options.pollIntervalMs ?? 100);
    this.retries = retryPolicy(options);
    this.warnAfterRetries = checkWarnAfterRetries(options.warnAfterRetries);
    this.logger = checkLogger('logger', options.logger);
    this.events = new JobEvents<RelayEventMap>((event, error) =>
      this.logger.error({ err: error, event }, `a listener of the relay's '${event}' event threw`),
    );
    // Checks the stream's and the producer's names as the broker does, before anything is sent.
    this.target = broker.target(to, { producer: name });
  }

  /** Adds a listener of the relay's events (see `RelayEventMap`); returns the function that removes it. */
  on<K extends keyof RelayEventMap>(
    name: K,
    listener: (event: RelayEventMap[K]) => void,
    options?: ListenerOptions,
  ): () => void {
    return this.events.on(name, listener, options);
  }

  /** Rows published and not confirmed yet. */
  get inFlight(): number {
    return this.unconfirmed;
  }

  /**
   * Publishes committed rows until `signal` aborts (or, with `untilCaughtUp`, until no
   * committed row is left and none waits behind an open transaction). Retriable errors (the
   * broker or the database away) are retried from where the stream stands; a permanent one is
   * thrown as a `RelayError`.
   */
  run(options: RunOptions = {}): Promise<RelayRunSummary> {
    return this.runs.start(() => this.runLoop(options));
  }

  /**
   * Stops a run under way (as its signal would), waits for it up to 5 s, releases the producer
   * and closes the database port (a pool given to `postgres()` stays open: it is yours).
   */
  async close(): Promise<void> {
    await this.runs.close();
    await this.target.release?.();
    await this.options.database.close();
  }

  /** Where the relay stands and how many committed rows are not on the stream yet. */
  async backlog(): Promise<RelayBacklog> {
    const lastPublishingId = await this.lastStored();
    await this.createTable();
    const { database } = this.options;
    return database.transaction(async (tx) => {
      const position = await this.cursorAt(lastPublishingId, (place) =>
        this.table.rowAt(tx, place),
      );
      const { rows, oldestAgeMs } = await this.table.backlog(tx, position);
      return { stream: this.stream, lastPublishingId, position, rows, oldestAgeMs };
    });
  }

  /**
   * Deletes the outbox rows the stream holds, all but those of the last transaction on it (kept:
   * the relay finds its place among them), and the key claims no writer can need any more.
   * Safe while relays run: it asks the broker first. Resolves with the rows deleted.
   */
  async prune(): Promise<number> {
    const place = readRelayPublishingId(await this.lastStored());
    if (place === undefined) return 0;
    await this.createTable();
    return this.options.database.transaction((tx) => this.table.prune(tx, place.txid));
  }

  /** The producer's last publishing id, asked without re-arming the target (a run may be under way). */
  private async lastStored(): Promise<bigint> {
    const ask = this.target.lastPublishingIdOf?.bind(this.target);
    if (ask === undefined) {
      throw new ConfigError(
        'broker',
        'must make targets that answer lastPublishingIdOf',
        this.name,
      );
    }
    return ask(this.name);
  }

  private async runLoop(options: RunOptions): Promise<RelayRunSummary> {
    const counters: Counters = { published: 0, batches: 0, retries: 0 };
    const signal = AbortSignal.any([
      this.runs.signal,
      ...(options.signal === undefined ? [] : [options.signal]),
    ]);
    let failure: unknown;
    try {
      await runRetrying(
        {
          policy: this.retries,
          signal,
          warning: new RetryWarning({
            logger: this.logger,
            warnAfter: this.warnAfterRetries,
            subject: `outbox relay '${this.name}' to '${this.stream}'`,
            fields: { relay: this.name, stream: this.stream },
          }),
          retriable: (error) => error instanceof RelayError && error.retriable,
          exhausted: (error) =>
            new RelayError(
              this.name,
              this.table.name,
              this.stream,
              error instanceof RelayError ? error.row : undefined,
              'retries',
              false,
              error,
            ),
          retrying: (error, delayMs) => {
            counters.retries++;
            const cause = error instanceof Error ? error : new Error(String(error));
            this.events.emit('retry', { error: cause, delayMs, retries: counters.retries });
            this.logger.warn(
              { err: error, relay: this.name, stream: this.stream, delayMs },
              `outbox relay '${this.name}' resumes from where '${this.stream}' stands in ${delayMs} ms`,
            );
          },
        },
        async (progressed) => {
          try {
            await this.relayFromStream(
              signal,
              options.untilCaughtUp === true,
              counters,
              progressed,
            );
          } catch (error) {
            throw this.asRelayError(error, 'read');
          }
        },
      );
      return { ...counters };
    } catch (error) {
      failure = error;
      this.logger.error(
        { err: error, relay: this.name, stream: this.stream },
        `outbox relay '${this.name}' stopped on an error`,
      );
      throw error;
    } finally {
      // The next run (or another process's relay of this name) declares the producer again.
      await this.target.release?.().catch(() => undefined);
      this.events.emit('stopped', { summary: { ...counters }, error: failure });
    }
  }

  /** One start: reads where the stream stands, then publishes what follows, batch by batch. */
  private async relayFromStream(
    signal: AbortSignal,
    untilCaughtUp: boolean,
    counters: Counters,
    progressed: () => void,
  ): Promise<void> {
    const { database } = this.options;
    await this.stage('prepare', undefined, () => this.createTable());
    // Asking re-arms the target after a failed publish: every publish before it has settled.
    const lastPublishingId = await this.stage('resume', undefined, () =>
      this.target.lastPublishingId(),
    );
    let cursor = await this.stage('resume', undefined, () =>
      database.transaction((tx) =>
        this.cursorAt(lastPublishingId, (place) => this.table.rowAt(tx, place)),
      ),
    );
    this.events.emit('started', {
      stream: this.stream,
      lastPublishingId,
      from: cursor,
      retries: counters.retries,
    });
    this.logger.info(
      { relay: this.name, stream: this.stream, lastPublishingId: lastPublishingId.toString() },
      `outbox relay '${this.name}' publishes to '${this.stream}' from ` +
        (cursor === undefined ? 'its first row' : `after row ${cursor.rowId}`),
    );
    let waitingFor: bigint | undefined;
    for (;;) {
      if (signal.aborted) return;
      const read = await this.stage('read', undefined, () =>
        database.transaction((tx) => this.table.read(tx, cursor, this.maxBatchRows)),
      );
      if (read.rows.length === 0) {
        if (read.waiting === 0) {
          waitingFor = undefined;
          if (untilCaughtUp) {
            this.events.emit('caughtUp', {
              stream: this.stream,
              lastPublishingId: cursor === undefined ? 0n : relayPublishingId(cursor),
            });
            return;
          }
        } else if (read.openFrom !== undefined && waitingFor !== read.openFrom) {
          waitingFor = read.openFrom;
          this.events.emit('waiting', {
            stream: this.stream,
            rows: read.waiting,
            openTransaction: read.openFrom,
          });
        }
        await sleep(this.pollIntervalMs, signal);
        continue;
      }
      waitingFor = undefined;
      cursor = await this.publish(read.rows, cursor);
      counters.published += read.rows.length;
      counters.batches++;
      progressed();
    }
  }

  /**
   * Publishes `rows` (the rows after `after`, in relay order) and resolves once every one is
   * confirmed, with the cursor at the last. On a failure it waits for every publish under way
   * to settle before throwing: the target refuses all after a failed one until it is re-armed.
   */
  private async publish(
    rows: readonly OutboxRecord[],
    after: OutboxCursor | undefined,
  ): Promise<OutboxCursor> {
    let cursor = after;
    const confirms: Promise<void>[] = [];
    let frame: { publishingId: bigint; message: Uint8Array }[] = [];
    /** The lengths of `frame`'s messages, as `plainEntriesFit` takes them. */
    let lengths: number[] = [];
    const send = (): void => {
      const entries = frame;
      frame = [];
      lengths = [];
      const sent =
        this.target.publishEach?.(entries) ??
        entries.map((entry) => this.target.publish(entry.publishingId, [entry.message]));
      this.unconfirmed += sent.length;
      for (const confirm of sent) {
        confirms.push(confirm.finally(() => this.unconfirmed--));
      }
    };
    let first: OutboxRecord | undefined;
    for (const row of rows) {
      first ??= row;
      const txid = BigInt(row.txid);
      const index = cursor !== undefined && cursor.txid === txid ? cursor.index + 1 : 0;
      const rowAt = { id: BigInt(row.id), txid };
      if (index >= MAX_ROWS_PER_TRANSACTION || txid > MAX_RELAY_TXID) {
        await Promise.allSettled(confirms);
        throw this.failure(
          'publish',
          rowAt,
          new Error(
            index >= MAX_ROWS_PER_TRANSACTION
              ? `a transaction with more than ${MAX_ROWS_PER_TRANSACTION} outbox rows cannot be published`
              : `transaction ids above ${MAX_RELAY_TXID} do not fit a publishing id`,
          ),
          false,
        );
      }
      cursor = { txid, index, rowId: rowAt.id };
      const message = outboxMessage(row);
      if (!plainEntriesFit([message.length], this.target.maxWriteBytes)) {
        await Promise.allSettled(confirms);
        throw this.failure(
          'publish',
          rowAt,
          new Error(
            `its message takes ${message.length} bytes, over the broker's limit of ` +
              `${this.target.maxWriteBytes} bytes per write: shorten the row or raise frame_max`,
          ),
          false,
        );
      }
      lengths.push(message.length);
      if (frame.length === ROWS_PER_FRAME || !plainEntriesFit(lengths, this.target.maxWriteBytes)) {
        send();
        lengths.push(message.length);
      }
      frame.push({ publishingId: relayPublishingId(cursor), message });
    }
    if (frame.length > 0) send();
    const settled = await Promise.allSettled(confirms);
    const failed = settled.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw this.asRelayError(failed.reason, 'publish');
    // A batch is never empty: the caller publishes only rows it found.
    const last = cursor as OutboxCursor;
    this.events.emit('published', {
      stream: this.stream,
      rows: rows.length,
      firstRowId: BigInt((first as OutboxRecord).id),
      lastRowId: last.rowId,
      lastPublishingId: relayPublishingId(last),
    });
    return last;
  }

  /**
   * The cursor at the row publishing id `lastPublishingId` names, found with `rowAt`; undefined
   * for 0 (nothing published). A row the table no longer has is a permanent `RelayError`.
   */
  private async cursorAt(
    lastPublishingId: bigint,
    rowAt: (place: { txid: bigint; index: number }) => Promise<bigint | undefined>,
  ): Promise<OutboxCursor | undefined> {
    const place = readRelayPublishingId(lastPublishingId);
    if (place === undefined) return undefined;
    const rowId = await rowAt(place);
    if (rowId === undefined) {
      throw this.failure(
        'resume',
        undefined,
        new Error(
          `the stream's last row (row ${place.index} of transaction ${place.txid}, publishing id ` +
            `${lastPublishingId}) is not in the table: rows of it or after it were deleted, or ` +
            'the table is not the one this relay published from; nothing was published',
        ),
        false,
      );
    }
    return { ...place, rowId };
  }

  private createTable(): Promise<void> {
    this.created ??= this.table.create(this.options.database).catch((error: unknown) => {
      this.created = undefined;
      throw error;
    });
    return this.created;
  }

  /** Runs `work`, its errors as `RelayError`s at `stage`. */
  private async stage<T>(
    stage: RelayStage,
    row: RelayError['row'],
    work: () => Promise<T>,
  ): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw this.asRelayError(error, stage, row);
    }
  }

  private asRelayError(error: unknown, stage: RelayStage, row?: RelayError['row']): RelayError {
    if (error instanceof RelayError) return error;
    const retriable = isRetriable(error) || this.options.database.isRetriable(error);
    return this.failure(stage, row, error, retriable);
  }

  private failure(
    stage: RelayStage,
    row: RelayError['row'],
    cause: unknown,
    retriable: boolean,
  ): RelayError {
    return new RelayError(this.name, this.table.name, this.stream, row, stage, retriable, cause);
  }
}
