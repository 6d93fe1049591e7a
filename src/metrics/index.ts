/**
 * 'stream-windows/metrics': Prometheus metrics of a job, through prom-client (an optional peer
 * dependency: install prom-client ^15 to use this entry; nothing else imports it).
 */

// Observing a job on a registry you pass, and what it returns.
export {
  jobMetrics,
  type JobMetrics,
  type JobMetricsOptions,
  type ObservedJob,
} from './job-metrics.js';
// The histogram buckets, in seconds, for dashboards and for users who want them documented.
export { LATENCY_BUCKETS, PROCESSING_BUCKETS, type MetricLabels } from './job-metric-set.js';
