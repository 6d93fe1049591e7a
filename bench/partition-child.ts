/**
 * One instance of the partitioned bench job (bench/partitions.ts), in its own process:
 *   partition-child.ts URL SUPER_STREAM TARGET [--single-active] [--partition i] [--until-caught-up] [--probe]
 * It connects, says `ready`, and starts on the first line on stdin. `--partition i` runs the
 * loop of partition i only (one process per partition); `--single-active` joins the job's
 * consumer group on every partition. Lines on stdout: `confirmed` per result, `done` when
 * the run ends (with `--until-caught-up`, once every loop caught up); with `--probe`, the
 * moments of its first start (./failover-probe.ts).
 */
import { createInterface } from 'node:readline';
import { connect } from '../src/rabbitmq/index.js';
import { partitionsJob } from './partitions-job.js';
import { probedSource, probedTarget, probeJob, probeLines } from './failover-probe.js';

const [url, superStream, target, ...flags] = process.argv.slice(2);
if (url === undefined || superStream === undefined || target === undefined) {
  throw new Error('usage: partition-child.ts URL SUPER_STREAM TARGET [flags]');
}
const at = flags.indexOf('--partition');
const only = at >= 0 ? Number(flags[at + 1]) : undefined;
const say = (line: string): void => void process.stdout.write(`${line}\n`);

const probe = flags.includes('--probe') ? probeLines(say) : undefined;

const rabbit = await connect(url);
const groupSource = rabbit.superStreamSource(
  superStream,
  flags.includes('--single-active') ? { singleActive: { name: 'bench-partitions' } } : {},
);
const source = probe === undefined ? groupSource : probedSource(groupSource, probe);
say('ready');
const lines = createInterface({ input: process.stdin });
await new Promise<void>((resolve) => lines.once('line', () => resolve()));
const stop = new AbortController();
process.once('SIGTERM', () => stop.abort());
const job = partitionsJob(source, (partition) => {
  const partitionTarget = rabbit.target(target, { producer: partition.producer });
  return probe === undefined ? partitionTarget : probedTarget(partitionTarget, probe);
});
if (probe !== undefined) probeJob(job, probe);
job.on('published', () => say('confirmed'));
await job.run({
  signal: stop.signal,
  untilCaughtUp: flags.includes('--until-caught-up'),
  partitions: (partition) => only === undefined || partition.index === only,
});
say('done');
await rabbit.close();
lines.close();
