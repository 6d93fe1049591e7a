/**
 * 'stream-windows/metrics': Prometheus metrics of a job, a database sink or an outbox relay,
 * through prom-client (an optional peer dependency: install prom-client ^15 to use this entry;
 * nothing else imports it).
 */

// Observing a job on a registry you pass, and what it returns.
export {
  jobMetrics,
  type JobMetrics,
  type JobMetricsOptions,
  type ObservedJob,
} from './job-metrics.js';
// Observing a database sink (databaseSink) the same way.
export {
  sinkMetrics,
  type SinkMetrics,
  type SinkMetricsOptions,
  type ObservedSink,
} from './sink-metrics.js';
// Observing an outbox relay (outboxRelay) the same way.
export {
  relayMetrics,
  type RelayMetrics,
  type RelayMetricsOptions,
  type ObservedRelay,
} from './relay-metrics.js';
// The histogram buckets, in seconds, for dashboards and for users who want them documented.
export { LATENCY_BUCKETS, PROCESSING_BUCKETS, type MetricLabels } from './job-metric-set.js';
