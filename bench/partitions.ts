import { PartitionWorkers } from '../src/partitioning/partition-workers.js';
import { connect, type RabbitMQ } from '../src/rabbitmq/index.js';
import { encodeReading, readings } from './corpus.js';
import { median, perSecond, ratioSpread } from './measure.js';
import { startChild } from './partition-child-process.js';
import { partitionsJob } from './partitions-job.js';
import type { PartitionsWorkerConfig } from './partitions-worker.js';
import { ratioRange, throughput, type CaseResult } from './report.js';

const WORKER = new URL('./partitions-worker.ts', import.meta.url);
/** Worker threads on Node 20 do not inherit `--import tsx`: this registers it in each. */
const REGISTER_TSX = new URL('../test/support/children/register-tsx.mjs', import.meta.url);
const KEYS = 100;
const START = Date.UTC(2025, 0, 1);
/** As the e2e case: 1 ms of event time per message, so 1,000 messages per 1-second window. */
const MS_PER_MESSAGE = 1;
const PUBLISH_BATCH = 500;

/**
 * Scaling out on the real broker (the failover time is ./failover.ts): the 2-partition job
 * against the same job on 1 partition (the same `messages` in all, split evenly), in
 * interleaved rounds with a rotating order: all partitions in this one process (one core: ~1.0
 * expected), and one child process per partition against one child on the 1-partition stream
 * (the process-per-partition way), and `PartitionWorkers` with 2 worker threads against 1
 * (timed from the first loop's start, past the threads' start-up). Ratios of the round
 * medians, with the min and max of the per-round ratios.
 */
export async function partitionCases(
  url: string,
  messages: number,
  repeats: number,
): Promise<CaseResult[]> {
  const rabbit = await connect(url);
  const superStreams: string[] = [];
  const streams: string[] = [];
  const newSuperStream = async (name: string, partitions: number): Promise<string[]> => {
    const created = await rabbit.createSuperStream(`${name}-${process.pid}`, { partitions });
    superStreams.push(`${name}-${process.pid}`);
    return created;
  };
  const newTarget = async (): Promise<string> => {
    const stream = `bench-partitions-results-${process.pid}-${streams.length}`;
    await rabbit.createStream(stream);
    streams.push(stream);
    return stream;
  };
  try {
    const [one] = await newSuperStream('bench-partitions-1', 1);
    const two = await newSuperStream('bench-partitions-2', 2);
    const half = Math.floor(messages / 2);
    await fill(rabbit, one as string, 0, 2 * half);
    for (const partition of two) await fill(rabbit, partition, 0, half);
    const oneName = `bench-partitions-1-${process.pid}`;
    const twoName = `bench-partitions-2-${process.pid}`;
    const inProcess = async (superStream: string): Promise<number> => {
      const target = await newTarget();
      const started = performance.now();
      await partitionsJob(rabbit.superStreamSource(superStream), (partition) =>
        rabbit.target(target, { producer: partition.producer }),
      ).run({ untilCaughtUp: true });
      return performance.now() - started;
    };
    const inChildren = async (superStream: string, partitions: number): Promise<number> => {
      const target = await newTarget();
      const children = Array.from({ length: partitions }, (_, p) =>
        startChild(url, superStream, target, ['--until-caught-up', '--partition', String(p)]),
      );
      await Promise.all(children.map((child) => child.ready));
      const started = performance.now();
      for (const child of children) child.go();
      await Promise.all(children.map((child) => child.done));
      const ms = performance.now() - started;
      await Promise.all(children.map((child) => child.exited));
      return ms;
    };
    const inWorkers = async (superStream: string, workers: number): Promise<number> => {
      const config: PartitionsWorkerConfig = { url, superStream, target: await newTarget() };
      const threads = new PartitionWorkers(WORKER, { workers, config, imports: [REGISTER_TSX] });
      // From the first loop's start: a thread's start-up (tsx transforming the modules in
      // it) is not the job's throughput; the other threads' later starts are counted.
      let started = Number.NaN;
      threads.on('started', () => {
        if (Number.isNaN(started)) started = performance.now();
      });
      await threads.run({ untilCaughtUp: true });
      const ms = performance.now() - started;
      await threads.close();
      return ms;
    };
    const tasks = {
      oneProcess1: () => inProcess(oneName),
      oneProcess2: () => inProcess(twoName),
      perProcess1: () => inChildren(oneName, 1),
      perProcess2: () => inChildren(twoName, 2),
      workers1: () => inWorkers(oneName, 1),
      workers2: () => inWorkers(twoName, 2),
    };
    const samples = await rotatingRounds(tasks, repeats);
    const total = 2 * half;
    return [
      scaling('one-process', total, samples.oneProcess1, samples.oneProcess2),
      scaling('process-per-partition', total, samples.perProcess1, samples.perProcess2),
      scaling('worker-threads', total, samples.workers1, samples.workers2),
    ];
  } finally {
    for (const stream of streams) await rabbit.deleteStream(stream).catch(() => undefined);
    for (const name of superStreams) await rabbit.deleteSuperStream(name).catch(() => undefined);
    await rabbit.close();
  }
}

/** Appends messages [from, to) of the corpus to `stream`, 500 per publish. */
export async function fill(
  rabbit: RabbitMQ,
  stream: string,
  from: number,
  to: number,
): Promise<void> {
  const feeder = rabbit.target(stream, { producer: 'bench-feeder' });
  const all = [...readings({ messages: to, keys: KEYS, windowMessages: to })];
  const pending: Promise<void>[] = [];
  for (let i = from; i < to; i += PUBLISH_BATCH) {
    const batch = all
      .slice(i, Math.min(to, i + PUBLISH_BATCH))
      .map((reading, j) => encodeReading(reading, START + (i + j) * MS_PER_MESSAGE));
    pending.push(feeder.publish(BigInt(i + batch.length - 1), batch));
  }
  await Promise.all(pending);
  await feeder.close();
}

function scaling(
  mode: string,
  messages: number,
  onePartition: readonly number[],
  twoPartitions: readonly number[],
): CaseResult {
  const spread = ratioSpread(twoPartitions, onePartition);
  return {
    name: `partitions/2-vs-1/${mode}`,
    kind: 'partitions',
    ...throughput(messages, twoPartitions),
    ratios: { onePartition: spread.median },
    values: {
      ...ratioRange('onePartition', spread),
      onePartitionMsgsPerSec: perSecond(messages, median(onePartition)),
    },
  };
}

/** Each task once per round, after one warm-up round, the order rotating every round. */
async function rotatingRounds<K extends string>(
  tasks: Readonly<Record<K, () => Promise<number>>>,
  repeats: number,
): Promise<Record<K, number[]>> {
  const names = Object.keys(tasks) as K[];
  const samples = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
    K,
    number[]
  >;
  for (let round = 0; round <= repeats; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length] as K;
      const ms = await tasks[name]();
      if (round > 0) samples[name].push(ms);
    }
  }
  return samples;
}
