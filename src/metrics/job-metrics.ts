import type { Registry } from 'prom-client';
import { ConfigError, ProcessingError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';
import type { Runner } from '../engine/runner.js';
import {
  JobMetricSet,
  OWN_LABELS,
  restartCause,
  type MetricLabels,
  type ScrapedJob,
} from './job-metric-set.js';
import { SourceEndProbe } from './source-end-probe.js';

/** What the metrics read from a job: its events, its results in flight, its source. */
export type ObservedJob = Pick<
  Runner<unknown, unknown, unknown>,
  'on' | 'inFlight' | 'source' | 'target'
>;

/** The options of a job's metrics: the prom-client registry, labels, and how the lag is read. */
export interface JobMetricsOptions {
  /**
   * Where the metrics are registered. Required: the library never touches prom-client's
   * global registry unless it is the one passed here.
   */
  readonly registry: Registry;
  /**
   * Constant labels telling this job's series from other jobs' on the same registry; every
   * job of one registry has the same label names. Default: `{ target, producer }` (the target
   * stream and producer name), which the broker's deduplication already makes unique.
   */
  readonly labels?: MetricLabels;
  /** How long a scrape waits for the source's end offset, for the lag (default 2,000 ms). */
  readonly lagTimeoutMs?: number;
  /**
   * An end offset younger than this serves the next scrapes without asking the broker again
   * (default 5,000 ms; 0 asks at every scrape). On RabbitMQ each question opens connections.
   */
  readonly lagCacheMs?: number;
}

/** The metrics of one job; `close()` stops observing it and removes its series. */
export interface JobMetrics {
  /** The constant labels on every series of this job: as given, or `{ target, producer }`. */
  readonly labels: MetricLabels;
  /** Stops observing the job and removes its series from the registry. */
  close(): void;
}

const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Prometheus metrics of a job, registered on the given prom-client `Registry` and fed by the
 * job's events (`runner.on`); the gauges are read at scrape time. Several jobs may share one
 * registry, told apart by their labels. See the README's "Metrics" for every series.
 */
export function jobMetrics(job: ObservedJob, options: JobMetricsOptions): JobMetrics {
  if (typeof (job as Partial<ObservedJob> | null)?.on !== 'function') {
    throw new ConfigError('job', 'must be a Runner (what .to() returns)', job);
  }
  const registry = checkRegistry((options as Partial<JobMetricsOptions> | undefined)?.registry);
  const labels = checkLabels(
    options.labels ?? { target: job.target.stream, producer: job.target.producer },
  );
  const probe = new SourceEndProbe(
    job.source,
    timerMs('lagTimeoutMs', options.lagTimeoutMs ?? 2_000),
    timerMs('lagCacheMs', options.lagCacheMs ?? 5_000, true),
  );
  // Where the job reads next; unknown until it started.
  let nextOffset: bigint | undefined;
  // Whether its source has a consumer group: the group series exist from its first `standby`.
  let grouped = false;
  const scraped: ScrapedJob = {
    labels,
    inFlight: () => job.inFlight,
    targetNode: () => {
      const node = job.target.node;
      return node === undefined ? undefined : `${node.host}:${node.port}`;
    },
    sourceLag: async () => {
      // Where the job stood when the scrape began, against the end the broker answers.
      const next = nextOffset;
      if (next === undefined) return undefined;
      const end = await probe.end();
      // A cached end may be older than the latest read: never a negative lag.
      return typeof end === 'bigint' ? Math.max(0, Number(end - next)) : end;
    },
  };
  const set = JobMetricSet.attach(registry, scraped);
  const bound = {
    messagesRead: set.messagesRead.labels(labels),
    stepsPublished: set.stepsPublished.labels(labels),
    outputsPublished: set.outputsPublished.labels(labels),
    lateKept: set.lateMessages.labels({ ...labels, outcome: 'kept' }),
    lateDropped: set.lateMessages.labels({ ...labels, outcome: 'dropped' }),
    filtered: set.filteredMessages.labels(labels),
    deadLetters: set.deadLetters.labels(labels),
    duplicates: set.duplicates.labels(labels),
    lastPublished: set.lastPublishedOffset.labels(labels),
    active: set.sourceActive.labels(labels),
    stepDowns: set.stepDowns.labels(labels),
    latency: set.stepLatency.labels(labels),
    processing: set.stepProcessing.labels(labels),
  };
  const unsubscribe = [
    job.on('standby', () => {
      if (!grouped) bound.stepDowns.inc(0);
      grouped = true;
      bound.active.set(0);
    }),
    job.on('started', (event) => {
      set.showStop(scraped, undefined);
      // 'first' before the first chunk: counted from 0, exact unless retention cut the head.
      nextOffset = event.from === 'first' ? 0n : event.from;
      // The offset, not the id (2^62 and up since steps may span writes): 0 when none yet.
      bound.lastPublished.set(Number(event.lastOffset ?? 0n));
      if (grouped) bound.active.set(1);
    }),
    job.on('read', (event) => {
      bound.messagesRead.inc(event.messages);
      // Over several inputs a chunk's offsets are its input's, not the job's: no lag yet.
      nextOffset =
        event.stream === undefined ? event.firstOffset + BigInt(event.messages) : undefined;
    }),
    job.on('published', (event) => {
      if (event.duplicate) {
        bound.duplicates.inc();
        return;
      }
      bound.stepsPublished.inc();
      bound.outputsPublished.inc(event.outputs);
      bound.lateKept.inc(event.late);
      bound.lateDropped.inc(event.lateDropped);
      bound.filtered.inc(event.filtered);
      bound.deadLetters.inc(event.deadLetters);
      bound.lastPublished.set(Number(event.lastOffset));
      bound.processing.observe(event.processingMs / 1000);
      // Event time against the wall clock: a producer clock ahead gives a negative figure.
      if (event.windowEnd !== null) bound.latency.observe((Date.now() - event.windowEnd) / 1000);
    }),
    job.on('restart', (event) => set.restarts.inc({ ...labels, cause: restartCause(event.error) })),
    job.on('stepDown', () => {
      bound.active.set(0);
      bound.stepDowns.inc();
    }),
    // A standby reads nothing: it has no lag of its own until it is activated (`started`).
    job.on('deactivated', () => void (nextOffset = undefined)),
    job.on('stopped', ({ error }) => {
      if (grouped) bound.active.set(0);
      // Only a stop `stream-windows skip` can step over: any other is the job's to fix.
      if (error instanceof ProcessingError && error.skippable) set.showStop(scraped, error);
    }),
  ];
  let closed = false;
  return {
    labels,
    close: () => {
      if (closed) return;
      closed = true;
      for (const off of unsubscribe) off();
      set.detach(scraped);
    },
  };
}

/** `registry` if it is a prom-client Registry, else a ConfigError. */
export function checkRegistry(registry: unknown): Registry {
  const shaped = registry as Partial<Record<keyof Registry, unknown>> | null | undefined;
  const methods = ['registerMetric', 'removeSingleMetric', 'getMetricsAsArray', 'metrics'] as const;
  if (methods.some((method) => typeof shaped?.[method] !== 'function')) {
    throw new ConfigError(
      'registry',
      "must be a prom-client Registry (new Registry()); prom-client's global one is never implied",
      registry,
    );
  }
  return registry as Registry;
}

function checkLabels(labels: unknown): MetricLabels {
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) {
    throw new ConfigError('labels', 'must be an object of label names to strings', labels);
  }
  for (const [name, value] of Object.entries(labels)) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) {
      throw new ConfigError(
        'labels',
        'must have Prometheus label names ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)',
        name,
      );
    }
    if (OWN_LABELS.includes(name)) {
      throw new ConfigError(
        'labels',
        `must not use the metrics' own ${OWN_LABELS.join(', ')}`,
        name,
      );
    }
    if (typeof value !== 'string') {
      throw new ConfigError(`labels.${name}`, 'must be a string', value);
    }
  }
  return { ...(labels as MetricLabels) };
}
