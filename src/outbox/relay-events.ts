import type { OutboxCursor } from './outbox-table.js';
import type { RelayPartition } from './relay-destination.js';

/** What a relay did in one `run()`. */
export interface RelayRunSummary {
  /** Rows published and confirmed by the broker (a row another relay of the name stored first counts too: a confirm does not tell). */
  readonly published: number;
  /** Reads of the outbox that found rows to publish. */
  readonly batches: number;
  /** Retriable errors the relay resumed after, from where the stream stands. */
  readonly retries: number;
}

/**
 * What a running outbox relay tells its observers (`relay.on(name, listener)`), in the job's
 * style: `started` (again after each `retry`), then `published` and `waiting` interleaved,
 * `caughtUp` at most once per start with `run({ untilCaughtUp })`, `stopped` once, last.
 */
export interface RelayEventMap {
  /** The relay read where the stream stands and publishes from the row after `from`. */
  readonly started: {
    /** The stream, or the super stream. */
    readonly stream: string;
    /** The producer's last publishing id on the stream, the highest of the partitions' on a super stream (0: it published nothing). */
    readonly lastPublishingId: bigint;
    /** On a super stream, each partition's standing: what the relay resumed from. */
    readonly partitions?: readonly RelayPartition[];
    /** The last row up to which the stream (every partition) holds all rows; undefined when none. */
    readonly from: OutboxCursor | undefined;
    /** Retriable errors before this start, in this run. */
    readonly retries: number;
  };
  /** Rows were published and every one confirmed. */
  readonly published: {
    readonly stream: string;
    readonly rows: number;
    /** The first and last of them, by row id. */
    readonly firstRowId: bigint;
    readonly lastRowId: bigint;
    /** The last one's publishing id: where a restart resumes. */
    readonly lastPublishingId: bigint;
  };
  /**
   * Committed rows wait because a transaction older than theirs is still open (it could yet
   * insert rows that come first): told once per blocking transaction.
   */
  readonly waiting: {
    readonly stream: string;
    /** Committed rows held back, counted up to the relay's `maxBatchRows`. */
    readonly rows: number;
    /** The oldest transaction still open (the relay's snapshot's xmin). */
    readonly openTransaction: bigint;
  };
  /** Every row committed before the relay (re)started (and since, while it read) is on the stream (`run({ untilCaughtUp })`). */
  readonly caughtUp: { readonly stream: string; readonly lastPublishingId: bigint };
  /** A retriable error: the relay resumes from where the stream stands after `delayMs`. */
  readonly retry: { readonly error: Error; readonly delayMs: number; readonly retries: number };
  /** `run()` is about to return (`error` undefined) or throw `error`. */
  readonly stopped: { readonly summary: RelayRunSummary; readonly error: unknown };
}

/** The name of a relay event, as `relay.on(name, listener)` takes it. */
export type RelayEventName = keyof RelayEventMap;
