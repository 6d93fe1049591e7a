import { availableParallelism } from 'node:os';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ConfigError, PartitionWorkerError } from '../common/errors.js';
import { checkLogger, type Logger } from '../common/logger.js';
import type { JobEventMap, JobEventName } from '../api/job-events.js';
import {
  checkProducers,
  totals,
  type Partition,
  type PartitionProducer,
  type PartitionedRunOptions,
  type PartitionedRunSummary,
  type PartitionListener,
} from './partitioned-runner.js';
import type { RunOptions } from '../api/run-options.js';
import { fromThread, withError } from './thread-error.js';

/** Which worker a job module builds the job for: it takes partitions `index rem workers`. */
export interface PartitionWorker {
  /** This worker's index, from 0: it runs the partitions whose index rem `workers` is this. */
  readonly index: number;
  /** How many workers the job runs on. */
  readonly workers: number;
  /** `PartitionWorkersOptions.config`, as the worker received it (a structured clone). */
  readonly config: unknown;
}

/** What a worker needs of a partitioned job: a `PartitionedRunner` (from `.toPartitions()`) is one. */
export interface PartitionedJob {
  /** Runs the partitions `options.partitions` selects, as `PartitionedRunner.run` does. */
  run(options: PartitionedRunOptions): Promise<PartitionedRunSummary>;
  /** Calls `listener` on each event `name` of any partition; returns the function that stops it. */
  on<K extends JobEventName>(name: K, listener: PartitionListener<K>): () => void;
  /** One per running partition loop: its results awaiting their confirm. */
  readonly runners: readonly { readonly inFlight: number }[];
}

/** What a job module's default export returns: the job, and what closes its connections. */
export interface PartitionWorkerJob {
  /** The partitioned job, as `.toPartitions()` builds it. */
  readonly job: PartitionedJob;
  /** Closes the connections the job uses (e.g. `() => rabbit.close()`); called once it stopped. */
  readonly close: () => unknown;
}

/**
 * The default export of a job module `PartitionWorkers` runs: called once in every worker
 * thread, it connects and builds the partitioned job (a job is code, so each thread builds
 * its own, with its own connections). The worker runs only the partitions it owns.
 */
export type PartitionWorkerModule = (
  worker: PartitionWorker,
) => PartitionWorkerJob | Promise<PartitionWorkerJob>;

/** The options of `new PartitionWorkers(module, options)`: how many worker threads, what each imports and is given. */
export interface PartitionWorkersOptions {
  /**
   * Worker threads (default `os.availableParallelism()`, one per core). Worker `i` runs the
   * partitions whose index rem `workers` is `i`; workers beyond the partition count idle.
   */
  readonly workers?: number;
  /**
   * Modules every worker imports first, in order (default none): a loader's registration,
   * say. URLs, paths (resolved against the current directory) or package specifiers. On Node 20 a worker does not inherit `--import` loaders, so a TypeScript job module
   * run with tsx needs a module that calls `register()` from 'tsx/esm/api'.
   */
  readonly imports?: readonly (string | URL)[];
  /**
   * What every worker's module is given as `worker.config` (default undefined): the broker's
   * URL, stream names. Structured-cloneable (no functions: code belongs in the module).
   */
  readonly config?: unknown;
  /** Where a listener that threw is reported (the job goes on); default silent. */
  readonly logger?: Logger;
}

/** A job event or outcome, as a worker thread posts it to the parent (which posts 'stop'). */
export type WorkerMessage =
  | {
      readonly type: 'event';
      readonly name: JobEventName;
      readonly event: unknown;
      readonly partition: Partition;
    }
  | { readonly type: 'inFlight'; readonly count: number }
  /** The producer names of its partitions' loops, before any starts: it waits for 'checked'. */
  | {
      readonly type: 'producers';
      readonly job: string;
      readonly producers: readonly PartitionProducer[];
    }
  | {
      readonly type: 'done';
      readonly summary: PartitionedRunSummary;
      /** The partitions the worker ran, in the order of `summary.partitions`. */
      readonly partitions: readonly Partition[];
    }
  | { readonly type: 'failed'; readonly error: unknown; readonly partition: string | undefined };

/**
 * What the parent posts to a worker thread: 'checked' once every thread's producer names
 * passed as the whole job's (its loops may start), 'stop' to stop.
 */
export type ParentMessage = 'checked' | 'stop';

/** What a worker thread is started with. */
export interface WorkerData {
  readonly module: string;
  readonly index: number;
  readonly workers: number;
  /** The events some listener wants: only those cross the thread boundary. */
  readonly events: readonly JobEventName[];
  readonly untilCaughtUp: boolean;
  readonly config: unknown;
}

type Final = Extract<WorkerMessage, { type: 'done' | 'failed' }>;

/**
 * A partitioned job over every core: its partitions spread over worker threads, each thread
 * building the job from `module` (a file exporting a `PartitionWorkerModule` as default) and
 * running the partitions it owns with its own connections. Each partition runs in exactly one
 * thread, so one loop per producer name, as in one process; other processes running the same
 * job still share the partitions through the source's single active consumer groups.
 *
 * `run()` resolves once every worker stopped, with the totals and every partition's summary;
 * its signal stops every worker. The producer names are checked once over every thread's
 * loops before any starts (a `ConfigError` rejects the run). The first worker to fail stops
 * the others and its error rejects the run (`PartitionWorkerError`, naming the worker and the
 * partition). Composes with `runUntilSignal(workers, { close: () => workers.close() })`:
 * signals reach the main thread only, and it stops the workers.
 */
export class PartitionWorkers {
  /** How many worker threads run the job (`options.workers`, default one per core). */
  readonly workers: number;
  private readonly module: string;
  private readonly imports: readonly string[];
  private readonly logger: Logger;
  private readonly config: unknown;
  private readonly listeners: {
    readonly name: JobEventName;
    readonly listener: PartitionListener<JobEventName>;
  }[] = [];
  private threads: Worker[] = [];
  private readonly inFlightOf = new Map<number, number>();

  /**
   * `module`: the job module, as a URL (`new URL('./job.js', import.meta.url)`) or a path
   * resolved against the current directory. Options are checked here (`ConfigError`).
   */
  constructor(module: URL | string, options: PartitionWorkersOptions = {}) {
    this.module = moduleUrl('module', module);
    const { workers = availableParallelism(), imports = [] } = options;
    if (!Number.isSafeInteger(workers) || workers < 1) {
      throw new ConfigError('workers', 'must be a positive integer', workers);
    }
    if (!Array.isArray(imports)) {
      throw new ConfigError('imports', 'must be an array of module URLs or specifiers', imports);
    }
    this.workers = workers;
    // A bare specifier ('tsx/esm/api') is resolved by the worker, a path here.
    this.imports = imports.map((entry: string | URL) =>
      typeof entry === 'string' && !entry.startsWith('.') && !entry.startsWith('/')
        ? entry
        : moduleUrl('imports', entry),
    );
    this.logger = checkLogger('logger', options.logger);
    try {
      structuredClone(options.config);
    } catch {
      throw new ConfigError(
        'config',
        'must be structured-cloneable (no functions)',
        options.config,
      );
    }
    this.config = options.config;
  }

  /** Results awaiting their confirm in every worker, as each told when asked to stop. */
  get inFlight(): number {
    return [...this.inFlightOf.values()].reduce((total, count) => total + count, 0);
  }

  /**
   * Observes every partition's loop in every worker (see JobEventMap), told the partition.
   * Events cross the thread boundary only for names listened to when `run()` starts; errors
   * in them arrive as copies (name, message, stack). Returns the function that removes it.
   */
  on<K extends JobEventName>(name: K, listener: PartitionListener<K>): () => void {
    const entry = { name, listener: listener as PartitionListener<JobEventName> };
    this.listeners.push(entry);
    return () => {
      const at = this.listeners.indexOf(entry);
      if (at >= 0) this.listeners.splice(at, 1);
    };
  }

  /** Runs every worker until `signal` aborts (or, with `untilCaughtUp`, each caught up). */
  async run(options: RunOptions = {}): Promise<PartitionedRunSummary> {
    if (this.threads.length > 0) {
      throw new ConfigError('run', 'must not be called while the job runs', this.module);
    }
    const data = {
      module: this.module,
      workers: this.workers,
      events: [...new Set(this.listeners.map(({ name }) => name))],
      untilCaughtUp: options.untilCaughtUp === true,
      config: this.config,
    };
    this.inFlightOf.clear();
    const post = (message: ParentMessage): void => {
      for (const worker of this.threads) worker.postMessage(message);
    };
    const stopAll = (): void => post('stop');
    let failure: Error | undefined;
    // The job's producer names are checked once, over every thread's, before any loop starts:
    // each thread alone sees only its own partitions. A thread that ended reported none.
    const producersOf = new Map<number, readonly PartitionProducer[]>();
    let job: string | undefined;
    const reported = (index: number, producers: readonly PartitionProducer[]): void => {
      if (producersOf.has(index)) return;
      producersOf.set(index, producers);
      if (producersOf.size < this.workers || failure !== undefined || job === undefined) return;
      const all = [...producersOf.values()].flat().sort((a, b) => a.partition - b.partition);
      try {
        checkProducers(job, all);
        post('checked');
      } catch (error) {
        failure = error as Error;
        stopAll();
      }
    };
    const started = Array.from({ length: this.workers }, (_, index) =>
      this.start({ ...data, index }, (name, producers) => {
        job ??= name;
        reported(index, producers);
      }),
    );
    this.threads = started.map(({ worker }) => worker);
    const { signal } = options;
    if (signal?.aborted === true) stopAll();
    signal?.addEventListener('abort', stopAll);
    try {
      const outcomes = await Promise.all(
        started.map(({ ended }, index) =>
          ended.then((final) => {
            if (final.type === 'failed' && failure === undefined) {
              failure = new PartitionWorkerError(
                index,
                this.workers,
                final.partition,
                fromThread(final.error),
              );
              stopAll();
            }
            reported(index, []);
            return final;
          }),
        ),
      );
      if (failure !== undefined) throw failure;
      return merge(outcomes.filter((final) => final.type === 'done'));
    } finally {
      signal?.removeEventListener('abort', stopAll);
      this.threads = [];
    }
  }

  /**
   * Ends the threads of a run under way at once (what `runUntilSignal` calls once the grace
   * ran out, or after the run stopped); a run it cuts short rejects.
   */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((worker) => worker.terminate()));
  }

  private start(
    data: WorkerData,
    producers: (job: string, producers: readonly PartitionProducer[]) => void,
  ): { worker: Worker; ended: Promise<Final> } {
    const entry = new URL(`./partition-worker${extname(import.meta.url)}`, import.meta.url);
    // Evaluated, not loaded from `entry`: the imports (a loader) must come before it.
    const boot = `(async () => { for (const m of ${JSON.stringify(this.imports)}) await import(m); await import(${JSON.stringify(entry.href)}); })();`;
    const worker = new Worker(boot, { eval: true, workerData: data });
    const ended = new Promise<Final>((resolveEnded) => {
      let final: Final | undefined;
      worker.on('message', (message: WorkerMessage) => {
        if (message.type === 'event') {
          this.emit(
            message.name,
            withError(message.event as object, fromThread),
            message.partition,
          );
        } else if (message.type === 'inFlight') this.inFlightOf.set(data.index, message.count);
        else if (message.type === 'producers') producers(message.job, message.producers);
        else {
          final = message;
          // Its job drained its confirms before stopping: the count sent at the stop is stale.
          this.inFlightOf.delete(data.index);
          // Its job stopped and closed its connections: nothing in the thread is needed.
          void worker.terminate();
        }
      });
      worker.on('error', (error) => (final ??= { type: 'failed', error, partition: undefined }));
      worker.on('exit', (code) =>
        resolveEnded(
          final ?? {
            type: 'failed',
            error: new Error(`the thread exited with code ${code} before its job stopped`),
            partition: undefined,
          },
        ),
      );
    });
    return { worker, ended };
  }

  private emit(name: JobEventName, event: unknown, partition: Partition): void {
    for (const entry of this.listeners.filter((listener) => listener.name === name)) {
      try {
        entry.listener(event as JobEventMap[JobEventName], partition);
      } catch (error) {
        this.logger.error(
          { event: name, partition: partition.stream, err: error },
          `a listener of '${name}' threw; the job goes on`,
        );
      }
    }
  }
}

/** `module` as the file URL a worker imports: a URL, a file URL string, or a path. */
function moduleUrl(parameter: string, module: URL | string): string {
  if (module instanceof URL) return module.href;
  if (typeof module !== 'string' || module === '') {
    throw new ConfigError(parameter, 'must be a URL or a path of a module', module);
  }
  return module.startsWith('file:') ? module : pathToFileURL(resolve(module)).href;
}

/** The workers' summaries as one: the totals, and the partitions' summaries in partition order. */
function merge(outcomes: readonly Extract<Final, { type: 'done' }>[]): PartitionedRunSummary {
  const partitions = outcomes
    .flatMap(({ summary, partitions: ran }) =>
      ran.map((partition, at) => ({ index: partition.index, summary: summary.partitions[at] })),
    )
    .sort((a, b) => a.index - b.index)
    .flatMap(({ summary }) => (summary === undefined ? [] : [summary]));
  return { ...totals(outcomes.map(({ summary }) => summary)), partitions };
}
