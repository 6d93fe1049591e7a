// 'stream-windows/cli': what the `stream-windows` command shows, for a job's own script.
// The command itself is ./main.ts (package.json "bin"); importing this entry runs nothing.

// A progress bar with ETA while a job catches up on its backlog (terminals only).
export { showProgress, type ProgressOptions, type ObservableJob } from './progress.js';
// Where a job stands, as `stream-windows status` computes it, over any Source and Target.
export { jobStatus, type JobStatus } from './status.js';
// Where a database sink stands, as `stream-windows status --sink` computes it, over any SinkDatabase.
export { sinkStatus, type SinkStatus } from './sink-status.js';
// Where an outbox relay stands, as `stream-windows status --relay` computes it, over any SinkDatabase and Target.
export { relayStatus, type RelayStatus } from './relay-status.js';
export type { StreamLag } from './stream-lag.js';
// What the command fails with on a command line it does not take (exit status 2).
export { UsageError } from './usage-error.js';
// An operator's skip request over any Source and Target, as `stream-windows skip` makes it.
export { requestSkip, pendingStop, type SkipRequest, type PendingStop } from './skip.js';
