import { ConfigError } from '../common/errors.js';
import { MAX_PRODUCERS_PER_STREAM } from '../common/stream-protocol.js';
import type { JobEventMap, JobEventName } from '../api/job-events.js';
import type { PartitionedSource, Source, Target } from '../ports/ports.js';
import type { Runner } from '../engine/runner.js';
import type { RunOptions, RunSummary } from '../api/run-options.js';
import { asPromise } from '../common/as-promise.js';

/** One partition of a partitioned job, as its target factory and its event listeners see it. */
export interface Partition {
  /** Its index in the super stream (the order of the broker's Partitions query). */
  readonly index: number;
  /** The partition stream. */
  readonly stream: string;
  /**
   * The producer name this partition's loop should publish under: `<job>@<partition stream>`
   * (see `partitionProducer`). Stable across restarts and instances, distinct per partition and
   * per job; named after the stream, not the index, so that a partition dropped from the super
   * stream moves no other's name.
   */
  readonly producer: string;
}

/** What `PartitionedRunner.run` returns: the totals, and each partition's own summary. */
export interface PartitionedRunSummary extends RunSummary {
  /** In partition order; with `partitions` given to `run`, of the partitions it took only. */
  readonly partitions: readonly RunSummary[];
}

/** How `PartitionedRunner.run` runs: a `RunOptions`, and which partitions this process takes. */
export interface PartitionedRunOptions extends RunOptions {
  /**
   * The partitions this run takes (default: all): called once per partition per run, in
   * partition order; the others get no loop, their sources are not read. For spreading a
   * job's partitions over processes or threads, each taking its own (`PartitionWorkers`).
   */
  readonly partitions?: (partition: Partition) => boolean;
}

/**
 * @internal What `PartitionWorkers`' threads add to a run that is one part of a job spread
 * wider (see `partitions`): `checkProducers`, given this run's producer names before any loop
 * starts, resolves once the whole job's names passed `checkProducers` (the parent gathers
 * every thread's and checks them once), or rejects (and the run with it). Not one of the
 * public options: a no-op would turn off the uniqueness and 255-names checks. Without it the
 * run is the whole job, its names checked here.
 */
export interface PartOfJobRunOptions extends PartitionedRunOptions {
  readonly checkProducers?: (job: string, producers: readonly PartitionProducer[]) => Promise<void>;
}

/** Where a partition's loop publishes, under which name: what `checkProducers` checks. */
export interface PartitionProducer {
  /** The partition's index in the super stream. */
  readonly partition: number;
  readonly stream: string;
  readonly producer: string;
}

/** A listener of one job event of any partition's loop, told which partition. */
export type PartitionListener<K extends JobEventName> = (
  event: JobEventMap[K],
  partition: Partition,
) => void;

/** Builds one partition's loop; `PartitionedRunner` calls it once per partition per run. */
export type PartitionLoop<T, A, R> = (
  source: Source,
  partition: Partition,
) => { readonly runner: Runner<T, A, R>; readonly target: Target };

/**
 * A job over a super stream: one read-process-write loop (a `Runner`) per partition, each
 * with its own producer name and so its own resume point, all in this process. Like a Kafka
 * Streams application's tasks, one per input partition: instances of the job started
 * anywhere with the same name share the partitions, as every partition source joins the same
 * single active consumer group (the broker activates one instance per partition and moves a
 * partition when instances come and go; each loop waits while it is passive).
 */
export class PartitionedRunner<T = unknown, A = unknown, R = unknown> {
  /** Every listener, with what removes it from the loops it was added to. */
  private readonly listeners: {
    readonly name: JobEventName;
    readonly listener: PartitionListener<JobEventName>;
    readonly detach: (() => void)[];
  }[] = [];
  private loops: { runner: Runner<T, A, R>; partition: Partition }[] = [];
  private running: { stop: AbortController; done: Promise<unknown> } | undefined;

  constructor(
    /** The super stream the job reads, one loop per partition. */
    readonly source: PartitionedSource,
    /** The job's name: the base of every producer name. */
    readonly name: string,
    private readonly loop: PartitionLoop<T, A, R>,
  ) {}

  /** The loops of the run under way (or of the last one), in partition order. */
  get runners(): readonly Runner<T, A, R>[] {
    return this.loops.map(({ runner }) => runner);
  }

  /**
   * Observes every partition's loop (see JobEventMap), now and in later runs; the listener is
   * told the partition. Returns the function that removes it.
   */
  on<K extends JobEventName>(name: K, listener: PartitionListener<K>): () => void {
    const entry = {
      name,
      listener: listener as PartitionListener<JobEventName>,
      detach: [] as (() => void)[],
    };
    this.listeners.push(entry);
    for (const loop of this.loops) this.attach(entry, loop);
    return () => {
      const at = this.listeners.indexOf(entry);
      if (at >= 0) this.listeners.splice(at, 1);
      for (const off of entry.detach.splice(0)) off();
    };
  }

  /**
   * Runs every partition's loop until `signal` aborts (or, with `untilCaughtUp`, each has
   * caught up). The first loop to fail stops the others (they let their confirms land) and
   * its error is thrown: a job is not left running on part of its partitions.
   */
  async run(options: PartitionedRunOptions = {}): Promise<PartitionedRunSummary> {
    if (this.running !== undefined) {
      throw new ConfigError('run', 'must not be called while the job runs', this.name);
    }
    const stop = new AbortController();
    const signal =
      options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
    // Whatever ended the run, its groups are left: a loop that stopped while stepping down
    // would otherwise stay a passive member, which the broker could pick and never hear from.
    const {
      partitions: taken = () => true,
      checkProducers: check = (job, producers) => asPromise(() => checkProducers(job, producers)),
      ...runOptions
    }: PartOfJobRunOptions = options;
    if (typeof taken !== 'function') {
      throw new ConfigError('partitions', 'must be a function of the partition', taken);
    }
    if (typeof check !== 'function') {
      throw new ConfigError('checkProducers', 'must be a function of the producer names', check);
    }
    const done = this.runLoops({ ...runOptions, signal }, taken, check, stop).finally(() =>
      this.source.close(),
    );
    this.running = { stop, done: done.catch(() => undefined) };
    try {
      return await done;
    } finally {
      this.running = undefined;
    }
  }

  /** Stops a run under way (as its signal would); its consumer groups are left when it ends. */
  async close(): Promise<void> {
    const running = this.running;
    running?.stop.abort();
    await running?.done;
    await this.source.close();
  }

  private attach(
    entry: (typeof this.listeners)[number],
    { runner, partition }: { runner: Runner<T, A, R>; partition: Partition },
  ): void {
    entry.detach.push(runner.on(entry.name, (event) => entry.listener(event, partition)));
  }

  private async runLoops(
    options: RunOptions,
    taken: (partition: Partition) => boolean,
    check: NonNullable<PartOfJobRunOptions['checkProducers']>,
    stop: AbortController,
  ): Promise<PartitionedRunSummary> {
    const sources = await this.source.partitions();
    const loops = sources.flatMap((source, index) => {
      const partition: Partition = {
        index,
        stream: source.stream,
        producer: partitionProducer(this.name, source.stream),
      };
      return taken(partition) ? [{ ...this.loop(source, partition), partition }] : [];
    });
    // Before any loop starts: stopped meanwhile, the loops below return at once.
    await check(
      this.name,
      loops.map(({ partition, target }) => ({
        partition: partition.index,
        stream: target.stream,
        producer: target.producer,
      })),
    );
    this.loops = loops;
    for (const loop of loops) for (const entry of this.listeners) this.attach(entry, loop);
    let failure: { error: unknown } | undefined;
    const summaries = await Promise.all(
      loops.map(({ runner }) =>
        runner.run(options).catch((error: unknown) => {
          failure ??= { error };
          stop.abort();
          return { results: 0, duplicates: 0, restarts: 0 };
        }),
      ),
    );
    if (failure !== undefined) throw failure.error;
    return { ...totals(summaries), partitions: summaries };
  }
}

/**
 * One instance per producer name: two loops of a job under one name on one target stream
 * would resume from each other's ids. And a stream tracks at most 255 names. `producers`: the
 * whole job's, in partition order.
 */
export function checkProducers(job: string, producers: readonly PartitionProducer[]): void {
  const perStream = new Map<string, Set<string>>();
  for (const { stream, producer } of producers) {
    const names = perStream.get(stream) ?? new Set<string>();
    if (names.has(producer)) {
      throw new ConfigError(
        'producer',
        `must be unique across the partitions of job '${job}' on target stream '${stream}'`,
        producer,
      );
    }
    names.add(producer);
    perStream.set(stream, names);
    if (names.size > MAX_PRODUCERS_PER_STREAM) {
      throw new ConfigError(
        'producers',
        `must be at most ${MAX_PRODUCERS_PER_STREAM} per target stream (RabbitMQ tracks that many), on '${stream}'`,
        names.size,
      );
    }
  }
}

/** The partitions' summaries added up. */
export function totals(summaries: readonly RunSummary[]): RunSummary {
  const sum = (field: keyof RunSummary): number =>
    summaries.reduce((total, summary) => total + summary[field], 0);
  return { results: sum('results'), duplicates: sum('duplicates'), restarts: sum('restarts') };
}

/**
 * The producer name of a partitioned job's loop over `partitionStream`: `<job>@<partition
 * stream>`, with `%` and `@` in the job's name written `%25` and `%40`. Injective: the first
 * `@` ends the job's part, so no two (job, partition) pairs share a name (with a plain `-`, job
 * `sum` over `orders-eu-0` and job `sum-orders` over `eu-0` did, and the second skipped its
 * input). The stream's name, not its index: a partition removed from the super stream would
 * shift every later index onto another partition's resume point. `partition.producer` in
 * `.toPartitions()`'s target factory is this name; call it where the name is needed outside
 * the factory, e.g. to create targets before the job: `partitionProducer('sum', 'orders-0')`
 * is `'sum@orders-0'`, `partitionProducer('a@b', 's')` is `'a%40b@s'`.
 */
export function partitionProducer(job: string, partitionStream: string): string {
  return `${job.replace(/[%@]/g, (char) => (char === '%' ? '%25' : '%40'))}@${partitionStream}`;
}

/**
 * The producer name versions before `partitionProducer` derived: `<job>-<partition stream>`
 * (not injective). Asked only to keep an upgraded job from re-reading its partitions.
 */
export function formerPartitionProducer(job: string, partitionStream: string): string {
  return `${job}-${partitionStream}`;
}
