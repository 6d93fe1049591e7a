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
import { cursorAfter, OutboxTable, type OutboxCursor, type OutboxRecord } from './outbox-table.js';
import {
  MAX_RELAY_TXID,
  MAX_ROWS_PER_TRANSACTION,
  readRelayPublishingId,
  relayPublishingId,
} from './relay-publishing-id.js';
import { RelayDestination, type RelayBroker, type RelayTarget } from './relay-destination.js';
import { readRelayBacklog, type RelayBacklog } from './relay-backlog.js';
import { relayPosition } from './relay-position.js';
import { RelayFrames } from './relay-frames.js';
import type { RelayEventMap, RelayRunSummary } from './relay-events.js';

export type { RelayBroker, RelayPartition, RelayTarget } from './relay-destination.js';

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
  /** The stream to publish to (or give `toSuperStream`). */
  readonly to?: string;
  /**
   * The super stream to publish to instead of a stream: each row to the partition its key
   * routes to, as the RabbitMQ clients route (`partitionIndexFor`), so that one key's rows stay
   * in order in one partition. Its partitions are asked of the broker once, at the first start.
   */
  readonly toSuperStream?: string;
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

/** Rows a relay reads at a time unless told (`maxBatchRows`). */
export const DEFAULT_MAX_BATCH_ROWS = 500;

/** How long a relay that found nothing waits before reading again unless told (`pollIntervalMs`), ms. */
export const DEFAULT_POLL_INTERVAL_MS = 100;

type Counters = { -readonly [K in keyof RelayRunSummary]: RelayRunSummary[K] };

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
 * Where it stands is read from the broker (the producer's last publishing id on the stream; on
 * a super stream, also what the partitions' last messages record, see ./relay-destination.ts):
 * nothing is written back to the database, so a crash anywhere loses no row and duplicates none.
 */
export class OutboxRelay {
  /** The relay's name (its producer's). */
  readonly name: string;
  /** The stream (or super stream) it publishes to. */
  readonly stream: string;
  private readonly table: OutboxTable;
  private readonly destination: RelayDestination;
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
    const { name, database, broker, to, toSuperStream } = options;
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
    if ((to === undefined) === (toSuperStream === undefined)) {
      throw new ConfigError(
        'to',
        'give exactly one of to (a stream) and toSuperStream (a super stream)',
        { to, toSuperStream },
      );
    }
    if (to !== undefined && (typeof to !== 'string' || to === '')) {
      throw new ConfigError('to', 'must be a non-empty stream name', to);
    }
    if (
      toSuperStream !== undefined &&
      (typeof toSuperStream !== 'string' || toSuperStream === '')
    ) {
      throw new ConfigError(
        'toSuperStream',
        'must be a non-empty super stream name',
        toSuperStream,
      );
    }
    this.name = name;
    this.runs = new SingleRun('relay', name);
    this.table = new OutboxTable(options.table);
    const maxBatchRows = options.maxBatchRows ?? DEFAULT_MAX_BATCH_ROWS;
    if (!Number.isSafeInteger(maxBatchRows) || maxBatchRows < 1) {
      throw new ConfigError('maxBatchRows', 'must be an integer >= 1', maxBatchRows);
    }
    this.maxBatchRows = maxBatchRows;
    this.pollIntervalMs = timerMs(
      'pollIntervalMs',
      options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS,
    );
    this.retries = retryPolicy(options);
    this.warnAfterRetries = checkWarnAfterRetries(options.warnAfterRetries);
    this.logger = checkLogger('logger', options.logger);
    this.events = new JobEvents<RelayEventMap>((event, error) =>
      this.logger.error({ err: error, event }, `a listener of the relay's '${event}' event threw`),
    );
    this.destination = new RelayDestination(
      broker,
      name,
      to === undefined ? { superStream: toSuperStream as string } : { stream: to },
    );
    this.stream = this.destination.name;
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
   * Stops a run under way (as its signal would), waits for it up to 5 s, closes the targets it
   * made on the broker (each holds one of a connection's 256 publishers; the connection stays
   * open: it is yours) and the database port (a pool given to `postgres()` stays open too).
   */
  async close(): Promise<void> {
    await this.runs.close();
    await this.destination.close();
    await this.options.database.close();
  }

  /** Where the relay stands and how many committed rows are not on the stream yet. */
  async backlog(): Promise<RelayBacklog> {
    const standing = await this.destination.standing(false);
    await this.createTable();
    return this.options.database.transaction((tx) =>
      readRelayBacklog(tx, this.table, this.destination, standing, this.maxBatchRows),
    );
  }

  /**
   * Deletes the outbox rows the stream holds, all but those of the transaction of the row it
   * resumes after (kept: the relay finds its place among them), and the key claims no writer
   * can need any more. Safe while relays run: it asks the broker first. Resolves with the rows
   * deleted. On a super stream, the resume point is the highest `sw-relay-through` of the
   * partitions' last messages: a partition that gets no row holds nothing back.
   */
  async prune(): Promise<number> {
    const place = readRelayPublishingId((await this.destination.standing(false)).resumeId);
    if (place === undefined) return 0;
    await this.createTable();
    return this.options.database.transaction((tx) => this.table.prune(tx, place.txid));
  }

  private async runLoop(options: RunOptions): Promise<RelayRunSummary> {
    const counters: Counters = { published: 0, batches: 0, retries: 0 };
    const signal = this.runs.signalWith(options.signal);
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
      await this.destination.release().catch(() => undefined);
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
    const targets = await this.stage('prepare', undefined, () =>
      this.destination.partitionTargets(),
    );
    // Asking re-arms the targets after a failed publish: every publish before it has settled.
    const standing = await this.stage('resume', undefined, () => this.destination.standing(true));
    let cursor = await this.stage('resume', undefined, () =>
      database.transaction((tx) =>
        relayPosition(tx, this.table, this.destination, standing, this.maxBatchRows),
      ),
    );
    const described = this.destination.described(standing);
    this.events.emit('started', { ...described, from: cursor, retries: counters.retries });
    for (const { stream, lastPublishingId, through } of described.partitions ?? []) {
      if (through !== undefined) continue;
      this.logger.warn(
        { relay: this.name, stream: this.stream, partition: stream },
        `outbox relay '${this.name}': the last message on partition '${stream}' (publishing ` +
          `id ${lastPublishingId}) is not on it any more (retention?); the other partitions ` +
          'tell where the relay resumes',
      );
    }
    this.logger.info(
      {
        relay: this.name,
        stream: this.stream,
        lastPublishingId: described.lastPublishingId.toString(),
      },
      `outbox relay '${this.name}' publishes to ` +
        (this.destination.superStream
          ? `super stream '${this.stream}' (${targets.length} partitions)`
          : `'${this.stream}'`) +
        ' from ' +
        (cursor === undefined ? 'its first row' : `after row ${cursor.rowId}`),
    );
    let waitingFor: bigint | undefined;
    for (;;) {
      if (signal.aborted) return;
      // Behind an open transaction, ask only whether it is still the oldest open: reading the
      // rows it holds back again on each poll would find none final till then.
      if (waitingFor !== undefined) {
        const oldest = await this.stage('read', undefined, () =>
          database.transaction((tx) => this.table.oldestOpen(tx)),
        );
        if (oldest === waitingFor) {
          await sleep(this.pollIntervalMs, signal);
          continue;
        }
      }
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
      cursor = await this.publish(read.rows, cursor, targets);
      counters.published += read.rows.length;
      counters.batches++;
      progressed();
    }
  }

  /**
   * Publishes `rows` (the rows after `after`, in relay order) to `targets`, each to its key's
   * partition, and resolves once every one is confirmed, with the cursor at the last. Each is
   * sent knowing every row up to `after` confirmed (a super stream's messages record it). On a
   * failure it waits for every publish under way to settle before throwing: a target refuses
   * all after a failed one until it is re-armed.
   */
  private async publish(
    rows: readonly OutboxRecord[],
    after: OutboxCursor | undefined,
    targets: readonly RelayTarget[],
  ): Promise<OutboxCursor> {
    const through = after === undefined ? 0n : relayPublishingId(after);
    const partitions = targets.map(
      (target) =>
        new RelayFrames(target, (confirm) => {
          this.unconfirmed++;
          return confirm.finally(() => this.unconfirmed--);
        }),
    );
    const settled = (): Promise<PromiseSettledResult<void>[]> =>
      Promise.allSettled(partitions.flatMap((partition) => partition.confirms));
    let cursor = after;
    for (const row of rows) {
      cursor = cursorAfter(cursor, row);
      if (cursor.index >= MAX_ROWS_PER_TRANSACTION || cursor.txid > MAX_RELAY_TXID) {
        await settled();
        throw this.failure(
          'publish',
          { id: cursor.rowId, txid: cursor.txid },
          new Error(
            cursor.index >= MAX_ROWS_PER_TRANSACTION
              ? `a transaction with more than ${MAX_ROWS_PER_TRANSACTION} outbox rows cannot be published`
              : `transaction ids above ${MAX_RELAY_TXID} do not fit a publishing id`,
          ),
          false,
        );
      }
      const publishingId = relayPublishingId(cursor);
      // An index below the count: a key's partition.
      const partition = partitions[
        this.destination.route(row.key, partitions.length)
      ] as RelayFrames;
      const message = this.destination.message(row, publishingId, through);
      // One plain entry fits a frame when it fits a write (ports/write-size.ts, plainEntriesFit).
      if (message.length > partition.target.maxWriteBytes) {
        await settled();
        throw this.failure(
          'publish',
          { id: cursor.rowId, txid: cursor.txid },
          new Error(
            `its message takes ${message.length} bytes, over the broker's limit of ` +
              `${partition.target.maxWriteBytes} bytes per write: shorten the row or raise frame_max`,
          ),
          false,
        );
      }
      partition.add(publishingId, message);
    }
    for (const partition of partitions) partition.send();
    const failed = (await settled()).find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw this.asRelayError(failed.reason, 'publish');
    // A batch is never empty: the caller publishes only rows it found.
    const last = cursor as OutboxCursor;
    this.events.emit('published', {
      stream: this.stream,
      rows: rows.length,
      firstRowId: BigInt((rows[0] as OutboxRecord).id),
      lastRowId: last.rowId,
      lastPublishingId: relayPublishingId(last),
    });
    return last;
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
