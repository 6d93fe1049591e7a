import type { RunSummary } from './run-options.js';

/**
 * What a running job tells its observers (`runner.on(name, listener)`). Offsets are source
 * offsets; a step's publishing id is its `lastOffset`. Every event of one run comes in this
 * order: `standby` (only for a single active consumer source: it waits in its group), then
 * `started`, then `read` and `published` interleaved, `restart` (then `standby` and `started`
 * again) after a retriable error, `stepDown` then `deactivated` (then `standby`, and `started`
 * once activated again) when another instance takes over, `caughtUp` at most once per start,
 * and `stopped` last. The same situation gives the same sequence on RabbitMQ and on the
 * embedded broker.
 */
export interface JobEventMap {
  /**
   * The job's single active consumer source is registered in its group and reads nothing until
   * the broker activates it (`started` then follows): at each start, and after each
   * `deactivated`. Never for a source without a group.
   */
  readonly standby: {
    /** The source stream (a super stream's partition) whose group the job waits in. */
    readonly stream: string;
    /** The consumer group's name. */
    readonly group: string;
  };
  /** The job asked the broker for its resume point and reads the source from `from`. */
  readonly started: {
    /**
     * The producer's last publishing id, as the broker answered: 0 when it never published
     * (see `readStepId` for what any other id says).
     */
    readonly lastPublishingId: bigint;
    /**
     * The last source offset of the producer's last step stored whole; undefined when none is
     * (or, on a target written by an earlier version, when that was offset 0).
     */
    readonly lastOffset: bigint | undefined;
    readonly from: bigint | 'first';
    /** Offset one past the source's last message at the start, when it was asked for. */
    readonly sourceEnd: bigint | undefined;
    /** Restarts before this start, in this run. */
    readonly restarts: number;
  };
  /** One source chunk was handed to the step processor. */
  readonly read: {
    readonly firstOffset: bigint;
    readonly messages: number;
    /** The chunk's broker timestamp, epoch ms. */
    readonly timestamp: number;
    /**
     * A job over several inputs (`mergeInputs`) only: the input's stream the chunk came from,
     * of which `firstOffset` is an offset (the job's own offsets are merged positions).
     */
    readonly stream?: string;
  };
  /** The broker confirmed a step's result (or discarded it as a duplicate). */
  readonly published: {
    readonly firstOffset: bigint;
    /** The step's last source offset, which its last write's publishing id carries. */
    readonly lastOffset: bigint;
    readonly messages: number;
    readonly outputs: number;
    /** Late values kept in the result ('side'), and late messages discarded ('drop'). */
    readonly late: number;
    readonly lateDropped: number;
    readonly filtered: number;
    readonly deadLetters: number;
    /** The broker had it already (published again on a replay) and discarded it. */
    readonly duplicate: boolean;
    /** End of the step's window in event time, epoch ms; null when it has none. */
    readonly windowEnd: number | null;
    /** From reading the chunk that completed the step to the confirm, ms. */
    readonly processingMs: number;
  };
  /** A retriable error stopped the loop; it resumes from the broker after `delayMs`. */
  readonly restart: {
    /**
     * One of the library's own errors (only those are retriable, see isRetriable), with its
     * `code`; from a PartitionWorkers thread, a copy with its name, message, stack and code.
     */
    readonly error: Error;
    readonly delayMs: number;
    /** Restarts so far in this run, this one included. */
    readonly restarts: number;
  };
  /**
   * The broker told this job's source to step down as its group's active reader (a rebalance
   * moves the partition to another instance). The job stops reading at once and drops what it
   * holds; the broker gets its answer once the `inFlight` results are confirmed (`deactivated`).
   */
  readonly stepDown: {
    readonly stream: string;
    readonly group: string;
    /** The offset after the last chunk handed to the job, when one was. */
    readonly nextOffset: bigint | undefined;
    /** Results awaiting their confirm: what the answer waits for. */
    readonly inFlight: number;
  };
  /**
   * The job answered a `stepDown`: the broker made another instance the active reader of this
   * job's single active consumer group (a rebalance of a super stream's partitions, say). The
   * job stopped reading, let the confirms under way land, then let the source answer the
   * broker; it waits to be activated again and then starts (`started`) from the resume point as
   * it is at that moment. Not a restart: no delay, not counted in `restarts`.
   */
  readonly deactivated: {
    /** The source stream whose group stepped this instance down. */
    readonly stream: string;
    /** The offset after the last chunk delivered before the step-down, when one was. */
    readonly nextOffset: bigint | undefined;
  };
  /** Every message the source held at the start has been processed (see `started.sourceEnd`). */
  readonly caughtUp: { readonly offset: bigint };
  /** `run()` is about to return (`error` undefined) or throw `error`. */
  readonly stopped: { readonly summary: RunSummary; readonly error: unknown };
}

/** The name of a job event, as `runner.on(name, listener)` takes it. */
export type JobEventName = keyof JobEventMap;

/** Every event a job emits, in the order they are documented above. */
export const JOB_EVENT_NAMES = [
  'standby',
  'started',
  'read',
  'published',
  'restart',
  'stepDown',
  'deactivated',
  'caughtUp',
  'stopped',
] as const satisfies readonly JobEventName[];
// Fails to compile when an event of JobEventMap is missing from the list above (the leading _
// tells the linter it is a compile-time check, never read).
const _everyEventListed: Exclude<JobEventName, (typeof JOB_EVENT_NAMES)[number]> extends never
  ? true
  : never = true;
/** A listener of the job event `K`, given that event. */
export type JobListener<K extends JobEventName> = (event: JobEventMap[K]) => void;

/** The options of `runner.on(name, listener, options)`. */
export interface ListenerOptions {
  /**
   * Run before the listeners added so far, as EventEmitter's `prependListener` (default: after
   * them). For a display that must tidy the terminal before other listeners write to it.
   */
  readonly prepend?: boolean;
}

/**
 * The observer list of one job (or of a database sink, whose events are its own map). Listeners
 * run synchronously where the event happens, so they
 * must be quick; one that throws is reported to `onListenerError` and the job goes on (an
 * observer never stops a billing job). `has` lets the runner skip building an event nobody
 * listens for: with no listener, observing costs one property read per chunk.
 */
export class JobEvents<M extends object = JobEventMap> {
  /** Replaced, never changed in place: an emit walks the list it started with, no copy. */
  private readonly listeners: { [K in keyof M]?: readonly ((event: M[K]) => void)[] } = {};

  constructor(private readonly onListenerError: (name: keyof M & string, error: unknown) => void) {}

  /** Adds a listener; returns the function that removes it. */
  on<K extends keyof M & string>(
    name: K,
    listener: (event: M[K]) => void,
    options: ListenerOptions = {},
  ): () => void {
    // A fresh wrapper per call: the same function added twice is removed once per remover.
    const entry = (event: M[K]): void => listener(event);
    const list = this.listeners[name] ?? [];
    this.setListeners(name, options.prepend === true ? [entry, ...list] : [...list, entry]);
    return () =>
      this.setListeners(
        name,
        (this.listeners[name] ?? []).filter((l) => l !== entry),
      );
  }

  has(name: keyof M & string): boolean {
    return (this.listeners[name]?.length ?? 0) > 0;
  }

  emit<K extends keyof M & string>(name: K, event: M[K]): void {
    const list: readonly ((event: M[K]) => void)[] | undefined = this.listeners[name];
    if (list === undefined) return;
    for (const listener of list) {
      try {
        listener(event);
      } catch (error) {
        this.onListenerError(name, error);
      }
    }
  }

  private setListeners<K extends keyof M>(name: K, list: readonly ((event: M[K]) => void)[]): void {
    this.listeners[name] = list;
  }
}
