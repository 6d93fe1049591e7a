import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { ConfigError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';
import { IDLE, orIdle } from '../ports/idle-timeout.js';
import type { DatabaseSink } from '../sink/database-sink.js';
import { checkRegistry } from './job-metrics.js';
import { PROCESSING_BUCKETS, SINK_METRIC_PREFIX } from './job-metric-set.js';

/** What the metrics read from a sink: its name, events, transactions under way and positions. */
export type ObservedSink = Pick<DatabaseSink<unknown>, 'name' | 'on' | 'inFlight' | 'positions'>;

/** The options of a database sink's metrics: the registry and how long a scrape waits for the lag. */
export interface SinkMetricsOptions {
  /** Where the metrics are registered (prom-client's global registry only when passed here). */
  readonly registry: Registry;
  /**
   * How long a scrape waits for the lag (default 2,000 ms): each scrape reads the checkpoints
   * from the database and the end offsets from the broker (`sink.positions()`).
   */
  readonly lagTimeoutMs?: number;
}

/** The metrics of one sink; `close()` stops observing it and removes its series. */
export interface SinkMetrics {
  /** Stops observing the sink and removes its series from the registry. */
  close(): void;
}

/**
 * Prometheus metrics of a database sink, labelled `sink` (its name) and, per stream, `stream`:
 * messages applied, skipped as already applied and dead-lettered, transactions and their
 * duration, retries, transactions in flight, and the lag (messages not applied yet) read at
 * scrape time. Several sinks may share one registry, and jobs' metrics (`jobMetrics`) too.
 */
export function sinkMetrics(sink: ObservedSink, options: SinkMetricsOptions): SinkMetrics {
  if (typeof (sink as Partial<ObservedSink> | null)?.positions !== 'function') {
    throw new ConfigError('sink', 'must be a database sink (what databaseSink() returns)', sink);
  }
  const registry = checkRegistry((options as Partial<SinkMetricsOptions> | undefined)?.registry);
  const lagTimeoutMs = timerMs('lagTimeoutMs', options.lagTimeoutMs ?? 2_000);
  const set = SinkMetricSet.attach(registry, sink, lagTimeoutMs);
  const labels = { sink: sink.name };
  const unsubscribe = [
    sink.on('applied', (event) => {
      const of = set.seriesOf(sink, event.stream);
      set.applied.inc(of, event.messages);
      set.skipped.inc(of, event.skipped);
      set.transactions.inc(labels);
      set.transactionSeconds.observe(labels, event.transactionMs / 1000);
    }),
    sink.on('skipped', (event) => {
      set.skipped.inc(set.seriesOf(sink, event.stream), event.messages);
      set.transactions.inc(labels);
    }),
    sink.on('deadLettered', (event) => set.deadLetters.inc(set.seriesOf(sink, event.stream))),
    sink.on('retry', () => set.retries.inc(labels)),
  ];
  let closed = false;
  return {
    close: () => {
      if (closed) return;
      closed = true;
      for (const off of unsubscribe) off();
      set.detach(sink);
    },
  };
}

const SINK_METRIC_NAMES = [
  'messages_applied_total',
  'messages_skipped_total',
  'dead_letters_total',
  'transactions_total',
  'retries_total',
  'transaction_seconds',
  'transactions_in_flight',
  'lag_messages',
].map((name) => SINK_METRIC_PREFIX + name);

/** The sink metrics of one registry, shared by the sinks observed on it. */
class SinkMetricSet {
  private static readonly byRegistry = new WeakMap<Registry, SinkMetricSet>();
  readonly applied: Counter;
  readonly skipped: Counter;
  readonly deadLetters: Counter;
  readonly transactions: Counter;
  readonly retries: Counter;
  readonly transactionSeconds: Histogram;
  private readonly perStream: readonly (Counter | Gauge)[];
  private readonly perSink: readonly (Counter | Gauge | Histogram)[];
  private readonly sinks = new Map<
    string,
    { readonly sink: ObservedSink; readonly lagTimeoutMs: number; readonly streams: Set<string> }
  >();

  private constructor(private readonly registry: Registry) {
    const registers = [registry];
    const perStream = ['sink', 'stream'];
    const perSink = ['sink'];
    this.applied = new Counter({
      name: 'stream_windows_sink_messages_applied_total',
      help: 'Messages a database sink applied (committed with its checkpoint).',
      labelNames: perStream,
      registers,
    });
    this.skipped = new Counter({
      name: 'stream_windows_sink_messages_skipped_total',
      help: 'Messages passed over as already applied (at or below the checkpoint: another instance).',
      labelNames: perStream,
      registers,
    });
    this.deadLetters = new Counter({
      name: 'stream_windows_sink_dead_letters_total',
      help: "Messages written to the sink's dead-letter table.",
      labelNames: perStream,
      registers,
    });
    this.transactions = new Counter({
      name: 'stream_windows_sink_transactions_total',
      help: 'Batch transactions committed.',
      labelNames: perSink,
      registers,
    });
    this.retries = new Counter({
      name: 'stream_windows_sink_retries_total',
      help: 'Resumes from the checkpoint after a retriable error.',
      labelNames: perSink,
      registers,
    });
    this.transactionSeconds = new Histogram({
      name: 'stream_windows_sink_transaction_seconds',
      help: "From a batch transaction's start to its commit.",
      labelNames: perSink,
      buckets: [...PROCESSING_BUCKETS],
      registers,
    });
    const inFlight = new Gauge({
      name: 'stream_windows_sink_transactions_in_flight',
      help: 'Batch transactions under way.',
      labelNames: perSink,
      registers,
      collect: () => {
        for (const { sink } of this.sinks.values())
          inFlight.set({ sink: sink.name }, sink.inFlight);
      },
    });
    const lag = new Gauge({
      name: 'stream_windows_sink_lag_messages',
      help: "Messages of the stream past the sink's checkpoint, read at scrape time.",
      labelNames: perStream,
      registers,
      collect: async () => {
        await Promise.all(
          [...this.sinks.values()].map(async ({ sink, lagTimeoutMs, streams }) => {
            const positions = await orIdle(
              sink.positions().catch(() => undefined),
              lagTimeoutMs,
            );
            // No figure is better than a stale one: absent from this scrape.
            if (positions === IDLE || positions === undefined) {
              for (const stream of streams) lag.remove({ sink: sink.name, stream });
              return;
            }
            for (const p of positions) lag.set(this.seriesOf(sink, p.stream), Number(p.lag));
          }),
        );
      },
    });
    this.perStream = [this.applied, this.skipped, this.deadLetters, lag];
    this.perSink = [this.transactions, this.retries, this.transactionSeconds, inFlight];
  }

  /** The labels of `sink`'s series of `stream`, noted so that `detach` can remove them. */
  seriesOf(sink: ObservedSink, stream: string): { sink: string; stream: string } {
    this.sinks.get(sink.name)?.streams.add(stream);
    return { sink: sink.name, stream };
  }

  static attach(registry: Registry, sink: ObservedSink, lagTimeoutMs: number): SinkMetricSet {
    let set = SinkMetricSet.byRegistry.get(registry);
    if (set === undefined) {
      set = new SinkMetricSet(registry);
      SinkMetricSet.byRegistry.set(registry, set);
    }
    if (set.sinks.has(sink.name)) {
      throw new ConfigError(
        'sink',
        'must differ in name from every other sink on this registry',
        sink.name,
      );
    }
    set.sinks.set(sink.name, { sink, lagTimeoutMs, streams: new Set() });
    set.transactions.inc({ sink: sink.name }, 0);
    set.retries.inc({ sink: sink.name }, 0);
    return set;
  }

  /** Removes a sink's series; the last sink takes the metrics out of the registry. */
  detach(sink: ObservedSink): void {
    const streams = this.sinks.get(sink.name)?.streams ?? new Set();
    this.sinks.delete(sink.name);
    if (this.sinks.size === 0) {
      for (const name of SINK_METRIC_NAMES) this.registry.removeSingleMetric(name);
      SinkMetricSet.byRegistry.delete(this.registry);
      return;
    }
    for (const metric of this.perSink) metric.remove({ sink: sink.name });
    for (const metric of this.perStream) {
      for (const stream of streams) metric.remove({ sink: sink.name, stream });
    }
  }
}
