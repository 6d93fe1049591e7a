import { Counter, Gauge, type Registry } from 'prom-client';
import { ConfigError } from '../common/errors.js';
import { timerMs } from '../common/timer-duration.js';
import { IDLE, orIdle } from '../ports/idle-timeout.js';
import type { OutboxRelay } from '../outbox/outbox-relay.js';
import { checkRegistry } from './job-metrics.js';
import { RELAY_METRIC_PREFIX } from './job-metric-set.js';
import { ScrapeRound } from './scrape-round.js';

/** What the metrics read from a relay: its name and stream, events, rows in flight and backlog. */
export type ObservedRelay = Pick<OutboxRelay, 'name' | 'stream' | 'on' | 'inFlight' | 'backlog'>;

/** The options of an outbox relay's metrics: the registry and how long a scrape waits for the backlog. */
export interface RelayMetricsOptions {
  /** Where the metrics are registered (prom-client's global registry only when passed here). */
  readonly registry: Registry;
  /**
   * How long a scrape waits for the backlog (default 2,000 ms): each scrape asks the broker
   * for the relay's last publishing id and counts the rows after it in the database
   * (`relay.backlog()`).
   */
  readonly backlogTimeoutMs?: number;
}

/** The metrics of one relay; `close()` stops observing it and removes its series. */
export interface RelayMetrics {
  /** Stops observing the relay and removes its series from the registry. */
  close(): void;
}

/**
 * Prometheus metrics of an outbox relay, labelled `relay` (its name) and `stream`: rows and
 * batches published, retries, waits behind an open transaction and the time spent in them,
 * rows in flight, and the backlog (committed rows not on the stream, the age of the oldest)
 * read at scrape time. Several relays may share one registry, and jobs' and sinks' metrics too.
 */
export function relayMetrics(relay: ObservedRelay, options: RelayMetricsOptions): RelayMetrics {
  if (typeof (relay as Partial<ObservedRelay> | null)?.backlog !== 'function') {
    throw new ConfigError('relay', 'must be an outbox relay (what outboxRelay() returns)', relay);
  }
  const registry = checkRegistry((options as Partial<RelayMetricsOptions> | undefined)?.registry);
  const backlogTimeoutMs = timerMs('backlogTimeoutMs', options.backlogTimeoutMs ?? 2_000);
  const { set, watched } = RelayMetricSet.attach(registry, relay, backlogTimeoutMs);
  const { labels } = watched;
  const unsubscribe = [
    relay.on('published', (event) => {
      set.published.inc(labels, event.rows);
      set.batches.inc(labels);
      set.endWait(watched);
    }),
    relay.on('waiting', () => {
      set.waits.inc(labels);
      watched.waitCountedTo ??= performance.now();
    }),
    // The wait ends with the batch it held back, or when the relay stops reading.
    relay.on('caughtUp', () => set.endWait(watched)),
    relay.on('retry', () => {
      set.retries.inc(labels);
      set.endWait(watched);
    }),
    relay.on('stopped', () => set.endWait(watched)),
  ];
  let closed = false;
  return {
    close: () => {
      if (closed) return;
      closed = true;
      for (const off of unsubscribe) off();
      set.detach(watched);
    },
  };
}

/** A relay on a registry: its labels, and the part of a wait under way not counted yet. */
interface Watched {
  readonly relay: ObservedRelay;
  readonly labels: { readonly relay: string; readonly stream: string };
  readonly backlogTimeoutMs: number;
  /** While the relay waits behind an open transaction: when the wait's counted time ends. */
  waitCountedTo: number | undefined;
}

const RELAY_METRIC_NAMES = [
  'rows_published_total',
  'batches_published_total',
  'retries_total',
  'waits_total',
  'wait_seconds_total',
  'rows_in_flight',
  'backlog_rows',
  'backlog_oldest_age_seconds',
].map((name) => RELAY_METRIC_PREFIX + name);

/** The relay metrics of one registry, shared by the relays observed on it. */
class RelayMetricSet {
  private static readonly byRegistry = new WeakMap<Registry, RelayMetricSet>();
  readonly published: Counter;
  readonly batches: Counter;
  readonly retries: Counter;
  readonly waits: Counter;
  private readonly waitSeconds: Counter;
  private readonly backlogRows: Gauge;
  private readonly backlogAge: Gauge;
  private readonly series: readonly (Counter | Gauge)[];
  /** Each relay by its labels, as JSON. */
  private readonly relays = new Map<string, Watched>();
  /** One `backlog()` per relay per scrape, for both backlog gauges. */
  private readonly backlogRound = new ScrapeRound(() => this.collectBacklogs());

  private constructor(private readonly registry: Registry) {
    const registers = [registry];
    const labelNames = ['relay', 'stream'];
    this.published = new Counter({
      name: 'stream_windows_relay_rows_published_total',
      help: 'Outbox rows the relay published and the broker confirmed.',
      labelNames,
      registers,
    });
    this.batches = new Counter({
      name: 'stream_windows_relay_batches_published_total',
      help: 'Batches published: reads of the outbox that found rows, each confirmed whole.',
      labelNames,
      registers,
    });
    this.retries = new Counter({
      name: 'stream_windows_relay_retries_total',
      help: 'Resumes from where the stream stands after a retriable error.',
      labelNames,
      registers,
    });
    this.waits = new Counter({
      name: 'stream_windows_relay_waits_total',
      help: 'Times the relay began waiting behind an open transaction that holds back younger committed rows.',
      labelNames,
      registers,
    });
    this.waitSeconds = new Counter({
      name: 'stream_windows_relay_wait_seconds_total',
      help: 'Time spent waiting behind open transactions, counted up to the scrape.',
      labelNames,
      registers,
      collect: () => {
        for (const watched of this.relays.values()) this.countWait(watched);
      },
    });
    const inFlight = new Gauge({
      name: 'stream_windows_relay_rows_in_flight',
      help: 'Rows published and awaiting their confirm.',
      labelNames,
      registers,
      collect: () => {
        for (const { relay, labels } of this.relays.values()) inFlight.set(labels, relay.inFlight);
      },
    });
    this.backlogRows = new Gauge({
      name: 'stream_windows_relay_backlog_rows',
      help: 'Committed outbox rows not on the stream yet, read at scrape time.',
      labelNames,
      registers,
      collect: () => this.backlogRound.join(),
    });
    this.backlogAge = new Gauge({
      name: 'stream_windows_relay_backlog_oldest_age_seconds',
      help: 'Event-time age of the oldest committed row not on the stream yet (0: none), read at scrape time.',
      labelNames,
      registers,
      collect: () => this.backlogRound.join(),
    });
    this.series = [
      this.published,
      this.batches,
      this.retries,
      this.waits,
      this.waitSeconds,
      inFlight,
      this.backlogRows,
      this.backlogAge,
    ];
  }

  /** Adds a relay to its registry's metrics, creating them for the first one. */
  static attach(
    registry: Registry,
    relay: ObservedRelay,
    backlogTimeoutMs: number,
  ): { set: RelayMetricSet; watched: Watched } {
    let set = RelayMetricSet.byRegistry.get(registry);
    if (set === undefined) {
      set = new RelayMetricSet(registry);
      RelayMetricSet.byRegistry.set(registry, set);
    }
    const labels = { relay: relay.name, stream: relay.stream };
    const key = JSON.stringify(labels);
    if (set.relays.has(key)) {
      throw new ConfigError(
        'relay',
        'must differ in name or stream from every other relay on this registry',
        relay.name,
      );
    }
    const watched: Watched = { relay, labels, backlogTimeoutMs, waitCountedTo: undefined };
    set.relays.set(key, watched);
    // Series at 0 from the start, so that rate() and alerts see them before the first event.
    for (const counter of [set.published, set.batches, set.retries, set.waits, set.waitSeconds]) {
      counter.inc(labels, 0);
    }
    return { set, watched };
  }

  /** Counts the wait under way, if any, up to now: a scrape sees a long wait grow. */
  private countWait(watched: Watched): void {
    if (watched.waitCountedTo === undefined) return;
    const now = performance.now();
    this.waitSeconds.inc(watched.labels, (now - watched.waitCountedTo) / 1000);
    watched.waitCountedTo = now;
  }

  /** Counts the wait under way, if any, and ends it. */
  endWait(watched: Watched): void {
    this.countWait(watched);
    watched.waitCountedTo = undefined;
  }

  /** Asks every relay at once: one slow database delays the scrape by its bound, not by the sum. */
  private async collectBacklogs(): Promise<void> {
    await Promise.all(
      [...this.relays.values()].map(async ({ relay, labels, backlogTimeoutMs }) => {
        const backlog = await orIdle(
          relay.backlog().catch(() => undefined),
          backlogTimeoutMs,
        );
        // No figure is better than a stale one: absent from this scrape.
        if (backlog === IDLE || backlog === undefined) {
          this.backlogRows.remove(labels);
          this.backlogAge.remove(labels);
          return;
        }
        this.backlogRows.set(labels, Number(backlog.rows));
        this.backlogAge.set(labels, (backlog.oldestAgeMs ?? 0) / 1000);
      }),
    );
  }

  /** Removes a relay's series; the last relay takes the metrics out of the registry. */
  detach(watched: Watched): void {
    this.relays.delete(JSON.stringify(watched.labels));
    if (this.relays.size === 0) {
      for (const name of RELAY_METRIC_NAMES) this.registry.removeSingleMetric(name);
      RelayMetricSet.byRegistry.delete(this.registry);
      return;
    }
    for (const metric of this.series) metric.remove(watched.labels);
  }
}
