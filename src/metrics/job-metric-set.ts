import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import {
  BrokerUnavailableError,
  ConfigError,
  PublishError,
  ResumePointError,
  SourceError,
} from '../common/errors.js';
import { ScrapeRound } from './scrape-round.js';
import type { NoEndOffset } from './source-end-probe.js';

/** A job's constant labels: the same names for every job of one registry. */
export type MetricLabels = Readonly<Record<string, string>>;

/**
 * Processing time (chunk read to confirm): a publish round trip on loopback is a millisecond
 * or two, a loaded broker or a large result tens to hundreds; above 10 s something is wrong.
 */
export const PROCESSING_BUCKETS: readonly number[] = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * Event-time latency (window end to confirm): a live job waits for the first message after
 * its window, so seconds; a job catching up on a backlog sees hours or days. 100 ms to a day.
 */
export const LATENCY_BUCKETS: readonly number[] = [
  0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400,
];

/** The names of a database sink's metrics (sink-metrics.ts): job metrics share a registry with them. */
export const SINK_METRIC_PREFIX = 'stream_windows_sink_';

/** The names of an outbox relay's metrics (relay-metrics.ts), which share a registry the same way. */
export const RELAY_METRIC_PREFIX = 'stream_windows_relay_';

/**
 * The error classes a restart is counted by: the runner restarts only on these (isRetriable),
 * a RetentionGapError as the SourceError it is. Anything else would count as 'other'.
 */
export const RESTART_CAUSES = [
  ['BrokerUnavailableError', BrokerUnavailableError],
  ['PublishError', PublishError],
  ['SourceError', SourceError],
  ['ResumePointError', ResumePointError],
] as const;

export function restartCause(error: unknown): string {
  return RESTART_CAUSES.find(([, type]) => error instanceof type)?.[0] ?? 'other';
}

/** What a scrape asks an observed job for; the counters are fed by its events instead. */
export interface ScrapedJob {
  readonly labels: MetricLabels;
  inFlight(): number;
  /** Source end offset minus the next offset to read; undefined before the job started. */
  sourceLag(): Promise<number | NoEndOffset | undefined>;
  /** The broker node ("host:port") the target's writes go to now; undefined where unknown. */
  targetNode(): string | undefined;
}

/** The label names the metrics use themselves, which a job's labels must not take. */
export const OWN_LABELS: readonly string[] = ['cause', 'outcome', 'reason', 'stage', 'le'];

type AnyMetric = Counter | Gauge | Histogram;

/**
 * The metrics of every job observed on one registry. A registry holds one metric per name, so
 * jobs share them and differ by their label values; the metrics leave the registry with the
 * last job.
 */
export class JobMetricSet {
  readonly messagesRead: Counter;
  readonly stepsPublished: Counter;
  readonly outputsPublished: Counter;
  readonly lateMessages: Counter;
  readonly filteredMessages: Counter;
  readonly deadLetters: Counter;
  readonly duplicates: Counter;
  readonly restarts: Counter;
  readonly lagFailures: Counter;
  readonly lastPublishedOffset: Gauge;
  readonly sourceActive: Gauge;
  readonly stepDowns: Counter;
  readonly stepLatency: Histogram;
  readonly stepProcessing: Histogram;
  private readonly inFlight: Gauge;
  private readonly sourceLag: Gauge;
  private readonly targetNode: Gauge;
  private readonly stoppedOffset: Gauge;
  /** The `stage` label each stopped job's series has, to remove it when the job starts again. */
  private readonly shownStops = new Map<ScrapedJob, string>();
  /** The `node` label each job's target series has now, to remove it when it moves. */
  private readonly shownNodes = new Map<ScrapedJob, string>();
  private readonly jobs = new Map<string, ScrapedJob>();
  /**
   * The lag and its failures of one scrape, one round for both metrics, so that a failure is
   * counted in the scrape that missed its lag.
   */
  private readonly lagRound = new ScrapeRound(() => this.collectSourceLag());
  /** Every metric of the set, with its name (prom-client keeps it private). */
  private readonly all: { readonly metric: AnyMetric; readonly name: string }[] = [];
  /** The counters with a label of their own, and every value it takes. */
  private readonly split: readonly { metric: Counter; label: string; values: string[] }[];

  private constructor(
    private readonly registry: Registry,
    private readonly labelNames: readonly string[],
  ) {
    const registers = [registry];
    const kept = <M extends AnyMetric>(name: string, metric: M): M => {
      this.all.push({ metric, name });
      return metric;
    };
    const counter = (
      name: string,
      help: string,
      own: string[] = [],
      collect?: () => Promise<void>,
    ): Counter =>
      kept(
        name,
        new Counter({
          name,
          help,
          labelNames: [...labelNames, ...own],
          registers,
          ...(collect && { collect }),
        }),
      );
    const gauge = (name: string, help: string, collect?: () => void | Promise<void>): Gauge =>
      kept(name, new Gauge({ name, help, labelNames, registers, ...(collect && { collect }) }));
    const histogram = (name: string, help: string, buckets: readonly number[]): Histogram =>
      kept(name, new Histogram({ name, help, labelNames, registers, buckets: [...buckets] }));
    this.messagesRead = counter(
      'stream_windows_messages_read_total',
      'Source messages read, re-reads after a restart included.',
    );
    this.stepsPublished = counter(
      'stream_windows_steps_published_total',
      'Step results the broker confirmed and stored.',
    );
    this.outputsPublished = counter(
      'stream_windows_outputs_published_total',
      'Keyed outputs in the stored step results.',
    );
    this.lateMessages = counter(
      'stream_windows_late_messages_total',
      'Late messages in the stored steps: kept in the result, or dropped.',
      ['outcome'],
    );
    this.filteredMessages = counter(
      'stream_windows_filtered_messages_total',
      'Messages the filter left out, in the stored steps.',
    );
    this.deadLetters = counter(
      'stream_windows_dead_letters_total',
      'Dead letters in the stored step results.',
    );
    this.duplicates = counter(
      'stream_windows_duplicates_total',
      'Step results published again on a replay, which the broker confirmed as duplicates.',
    );
    this.restarts = counter(
      'stream_windows_restarts_total',
      'Resumes from the broker after a retriable error (a lost publish among them), by error class.',
      ['cause'],
    );
    this.lagFailures = counter(
      'stream_windows_source_lag_failures_total',
      "Scrapes without a source lag: the source's end offset timed out or failed.",
      ['reason'],
      () => this.lagRound.join(),
    );
    this.lastPublishedOffset = gauge(
      'stream_windows_last_published_offset',
      'Publishing id (source offset) of the last stored step; the job resumes after it.',
    );
    this.sourceActive = gauge(
      'stream_windows_source_active',
      "1 while the job's single active consumer source is its group's active reader, 0 while it stands by.",
    );
    this.stepDowns = counter(
      'stream_windows_step_downs_total',
      "Times the broker told the job's single active consumer source to step down (a rebalance).",
    );
    this.inFlight = gauge(
      'stream_windows_results_in_flight',
      'Results published and awaiting their confirm.',
      () => this.collectInFlight(),
    );
    this.sourceLag = gauge(
      'stream_windows_source_lag_messages',
      'Source end offset minus the next offset the job reads.',
      () => this.lagRound.join(),
    );
    this.targetNode = kept(
      'stream_windows_target_node_info',
      new Gauge({
        name: 'stream_windows_target_node_info',
        help: "1 for the broker node the target's writes go to now (a cluster stream's leader).",
        labelNames: [...labelNames, 'node'],
        registers,
        collect: () => this.collectTargetNodes(),
      }),
    );
    this.stoppedOffset = kept(
      'stream_windows_stopped_offset',
      new Gauge({
        name: 'stream_windows_stopped_offset',
        help:
          'Source offset of the message that stopped the job (a ProcessingError that ' +
          '`stream-windows skip` can step over), labelled with the stage that failed; absent ' +
          'while the job runs.',
        labelNames: [...labelNames, 'stage'],
        registers,
      }),
    );
    this.stepLatency = histogram(
      'stream_windows_step_latency_seconds',
      "From the end of a step's window (event time) to its confirm.",
      LATENCY_BUCKETS,
    );
    this.stepProcessing = histogram(
      'stream_windows_step_processing_seconds',
      'From reading the chunk that completed a step to its confirm.',
      PROCESSING_BUCKETS,
    );
    this.split = [
      { metric: this.lateMessages, label: 'outcome', values: ['kept', 'dropped'] },
      {
        metric: this.restarts,
        label: 'cause',
        values: [...RESTART_CAUSES.map(([name]) => name), 'other'],
      },
      { metric: this.lagFailures, label: 'reason', values: ['timeout', 'error'] },
    ];
  }

  private static readonly byRegistry = new WeakMap<Registry, JobMetricSet>();

  /** Adds a job to its registry's metrics, creating them for the first one. */
  static attach(registry: Registry, job: ScrapedJob): JobMetricSet {
    const names = Object.keys(job.labels).sort();
    let set = JobMetricSet.byRegistry.get(registry);
    if (set === undefined) {
      const foreign = registry
        .getMetricsAsArray()
        .find(
          (metric) =>
            metric.name.startsWith('stream_windows_') &&
            !metric.name.startsWith(SINK_METRIC_PREFIX) &&
            !metric.name.startsWith(RELAY_METRIC_PREFIX),
        );
      if (foreign !== undefined) {
        // Registering would throw half-way; most likely a second copy of this library.
        throw new ConfigError(
          'registry',
          'must not hold stream_windows_ metrics that this jobMetrics did not register',
          foreign.name,
        );
      }
      set = new JobMetricSet(registry, names);
      JobMetricSet.byRegistry.set(registry, set);
    } else if (set.labelNames.join() !== names.join()) {
      throw new ConfigError(
        'labels',
        `must have the names the other jobs on this registry have (${set.labelNames.join(', ')})`,
        job.labels,
      );
    }
    const key = JSON.stringify(names.map((name) => job.labels[name]));
    if (set.jobs.has(key)) {
      throw new ConfigError(
        'labels',
        'must differ from those of every other job on this registry',
        job.labels,
      );
    }
    set.jobs.set(key, job);
    set.zero(job.labels);
    return set;
  }

  /** Removes a job's series; the last job takes the metrics out of the registry. */
  detach(job: ScrapedJob): void {
    for (const [key, attached] of this.jobs) if (attached === job) this.jobs.delete(key);
    this.showNode(job, undefined);
    this.showStop(job, undefined);
    for (const { metric } of this.all) {
      const split = this.split.find((entry) => entry.metric === metric);
      if (metric === this.targetNode || metric === this.stoppedOffset) continue; // above
      if (split === undefined) metric.remove(job.labels);
      else {
        for (const value of split.values) metric.remove({ ...job.labels, [split.label]: value });
      }
    }
    if (this.jobs.size > 0) return;
    for (const { name } of this.all) this.registry.removeSingleMetric(name);
    JobMetricSet.byRegistry.delete(this.registry);
  }

  /** Series at 0 from the start, so that rate() and alerts see them before the first event. */
  private zero(labels: MetricLabels): void {
    for (const metric of [
      this.messagesRead,
      this.stepsPublished,
      this.outputsPublished,
      this.filteredMessages,
      this.deadLetters,
      this.duplicates,
    ]) {
      metric.inc(labels, 0);
    }
    for (const { metric, label, values } of this.split) {
      for (const value of values) metric.inc({ ...labels, [label]: value }, 0);
    }
    this.stepLatency.zero(labels);
    this.stepProcessing.zero(labels);
  }

  private collectTargetNodes(): void {
    for (const job of this.jobs.values()) this.showNode(job, job.targetNode());
  }

  /** One series per job, labelled with where its target writes now; none while unknown. */
  private showNode(job: ScrapedJob, node: string | undefined): void {
    const shown = this.shownNodes.get(job);
    if (shown === node) return;
    if (shown !== undefined) this.targetNode.remove({ ...job.labels, node: shown });
    if (node === undefined) {
      this.shownNodes.delete(job);
      return;
    }
    this.targetNode.set({ ...job.labels, node }, 1);
    this.shownNodes.set(job, node);
  }

  /**
   * The message that stopped `job` (its offset and failing stage), or none (undefined): one
   * series per stopped job, gone when it starts again.
   */
  showStop(job: ScrapedJob, stop: { offset: bigint; stage: string } | undefined): void {
    const shown = this.shownStops.get(job);
    if (shown !== undefined) this.stoppedOffset.remove({ ...job.labels, stage: shown });
    this.shownStops.delete(job);
    if (stop === undefined) return;
    this.stoppedOffset.set({ ...job.labels, stage: stop.stage }, Number(stop.offset));
    this.shownStops.set(job, stop.stage);
  }

  private collectInFlight(): void {
    for (const job of this.jobs.values()) this.inFlight.set(job.labels, job.inFlight());
  }

  /** Asks every job at once: one slow source delays the scrape by its bound, not by the sum. */
  private async collectSourceLag(): Promise<void> {
    const jobs = [...this.jobs.values()];
    const lags = await Promise.all(jobs.map((job) => job.sourceLag()));
    jobs.forEach((job, i) => {
      const lag = lags[i];
      if (typeof lag === 'number') {
        this.sourceLag.set(job.labels, lag);
        return;
      }
      // No figure is better than a stale one: the series is absent from this scrape.
      this.sourceLag.remove(job.labels);
      if (lag !== undefined) this.lagFailures.inc({ ...job.labels, reason: lag });
    });
  }
}
