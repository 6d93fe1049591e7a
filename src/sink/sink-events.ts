import type { SinkRunSummary } from './database-sink.js';

/**
 * What a running database sink tells its observers (`sink.on(name, listener)`), in the job's
 * style (src/api/job-events.ts). Offsets are the stream's; `stream` is the partition's name
 * for a super stream. Per stream: `started`, then `applied`, `skipped` and `deadLettered`
 * interleaved, `retry` (then `started` again) after a retriable error, `caughtUp` at most once
 * per start; `stopped` once, last.
 */
export interface SinkEventMap {
  /** The sink read its checkpoint and reads the stream from `from`. */
  readonly started: {
    readonly stream: string;
    /** The last offset applied; -1 when nothing was. */
    readonly checkpoint: bigint;
    readonly from: bigint | 'first';
    /** Retriable errors before this start, in this run. */
    readonly retries: number;
  };
  /** A batch was applied: its transaction, checkpoint included, committed. */
  readonly applied: {
    readonly stream: string;
    readonly firstOffset: bigint;
    readonly lastOffset: bigint;
    /** Messages applied (those of the batch past the checkpoint, less the dead-lettered). */
    readonly messages: number;
    /** Messages of the batch at or below the checkpoint: another instance applied them. */
    readonly skipped: number;
    /** From the transaction's start to its commit, ms. */
    readonly transactionMs: number;
  };
  /** A whole batch was at or below the checkpoint (another instance applied it): nothing applied. */
  readonly skipped: {
    readonly stream: string;
    readonly firstOffset: bigint;
    readonly lastOffset: bigint;
    /** Messages of the batch, all passed over. */
    readonly messages: number;
    readonly checkpoint: bigint;
  };
  /** A message went to the sink's dead-letter table (`onError`), in its batch's transaction. */
  readonly deadLettered: {
    readonly stream: string;
    readonly offset: bigint;
    readonly error: Error;
  };
  /** A retriable error (a `SinkError` with `retriable`, or the source's): the sink resumes from its checkpoint after `delayMs`. */
  readonly retry: { readonly error: Error; readonly delayMs: number; readonly retries: number };
  /** Every message the stream held at the start is applied (`run({ untilCaughtUp })`). */
  readonly caughtUp: { readonly stream: string; readonly offset: bigint };
  /** `run()` is about to return (`error` undefined) or throw `error`. */
  readonly stopped: { readonly summary: SinkRunSummary; readonly error: unknown };
}

/** The name of a database sink event, as `sink.on(name, listener)` takes it. */
export type SinkEventName = keyof SinkEventMap;
