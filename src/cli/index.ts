// 'stream-windows/cli': what the `stream-windows` command shows, for a job's own script.
// The command itself is ./main.ts (package.json "bin"); importing this entry runs nothing.

// A progress bar with ETA while a job catches up on its backlog (terminals only).
export { showProgress, type ProgressOptions, type ObservableJob } from './progress.js';
// Where a job stands, as `stream-windows status` computes it, over any Source and Target.
export { jobStatus, type JobStatus } from './status.js';
