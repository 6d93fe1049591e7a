import { cpus, loadavg } from 'node:os';
import { PartitionWorkers } from '../src/partitioning/partition-workers.js';
import { connect } from '../src/rabbitmq/index.js';
import { brokerCpu, notMeasured } from './broker-cpu.js';
import {
  cpuClock,
  interleavedRounds,
  median,
  ratioSpread,
  spreadOf,
  type Cost,
} from './measure.js';
import { fill } from './partitions.js';
import type { PartitionsWorkerConfig } from './partitions-worker.js';
import { ratioRange, throughput, type CaseResult } from './report.js';
import type { ScalingWorkerConfig } from './scaling-worker.js';

const EMBEDDED_WORKER = new URL('./scaling-worker.ts', import.meta.url);
const RABBITMQ_WORKER = new URL('./partitions-worker.ts', import.meta.url);
/** Worker threads on Node 20 do not inherit `--import tsx`: this registers it in each. */
const REGISTER_TSX = new URL('../test/support/children/register-tsx.mjs', import.meta.url);
/** The partition counts of the RabbitMQ runs, one worker thread each. */
export const RABBITMQ_PARTITIONS = [1, 2, 4] as const;

/**
 * Scaling that can be judged on a shared 2-core machine (issue 22), by CPU time as well as
 * wall time, in rotating interleaved rounds:
 * - `embeddedScalingCases`: `PartitionWorkers` with 2 threads against 1 on the embedded
 *   broker (no RabbitMQ on the cores): the same 2-partition job, each thread with its own
 *   broker holding its partitions. Wall ratio, CPU per message of each, and the cores each
 *   run got (CPU over wall): the wall ratio is the cores' ratio over the CPU-per-message ratio.
 * - `rabbitScalingCases`: on RabbitMQ, the job's CPU per message with 1, 2 and 4 partitions
 *   (one worker thread each, the same messages in all): flat means it scales; with the
 *   broker's CPU per message (its processes, from /proc) and its share of the two.
 * Every run is timed from its first loop's start: the threads' start-up (tsx) and building
 * (filling the embedded broker) come before it and are not the job's throughput.
 */
export async function scalingCases(
  messages: number,
  repeats: number,
  url: string | undefined,
): Promise<CaseResult[]> {
  const embedded = await embeddedScalingCases(messages, repeats);
  if (url === undefined) {
    return [
      ...embedded,
      {
        name: 'scaling/rabbitmq',
        kind: 'scaling',
        msgsPerSec: Number.NaN,
        ratios: {},
        notes: ['NOT RUN: no broker (set RABBITMQ_STREAM_URL or start scripts/rabbitmq.sh)'],
      },
    ];
  }
  return [...embedded, ...(await rabbitScalingCases(url, messages, repeats))];
}

export async function embeddedScalingCases(
  messages: number,
  repeats: number,
): Promise<CaseResult[]> {
  const config: ScalingWorkerConfig = { partitions: 2, messagesPerPartition: messages >> 1 };
  const total = 2 * config.messagesPerPartition;
  const load = loadavg()[0] ?? Number.NaN;
  const rounds = await interleavedRounds(
    {
      oneThread: () => workersCost(EMBEDDED_WORKER, 1, config, total),
      twoThreads: () => workersCost(EMBEDDED_WORKER, 2, config, total),
    },
    repeats,
  );
  const one = rounds.oneThread;
  const two = rounds.twoThreads;
  const wallRatio = spreadOf(one.map((cost, round) => cost.wallMs / (two[round]?.wallMs ?? 0)));
  const cores = (costs: readonly Cost[]): number =>
    median(costs.map((cost) => cost.cpuMs / cost.wallMs));
  return [
    {
      name: 'scaling/embedded/2-threads-vs-1',
      kind: 'scaling',
      ...throughput(
        total,
        two.map((cost) => cost.wallMs),
      ),
      ratios: { oneThread: median(wall(one)) / median(wall(two)) },
      values: {
        oneThreadMin: wallRatio.min,
        oneThreadMax: wallRatio.max,
        ...perMessage('cpuUsPerMsg', two, total, (cost) => cost.cpuMs),
        ...perMessage('oneThreadCpuUsPerMsg', one, total, (cost) => cost.cpuMs),
        cpuPerMsgOverOneThread: median(cpu(two)) / median(cpu(one)),
        coresUsed: cores(two),
        oneThreadCoresUsed: cores(one),
        oneThreadMsgsPerSec: throughput(total, wall(one)).msgsPerSec,
      },
      notes: [loadNote(load)],
    },
  ];
}

export async function rabbitScalingCases(
  url: string,
  messages: number,
  repeats: number,
): Promise<CaseResult[]> {
  const rabbit = await connect(url);
  const broker = brokerCpu(url);
  const brokerClock = broker.measured ? broker.cpuMs : undefined;
  const perPartition = Math.floor(messages / Math.max(...RABBITMQ_PARTITIONS));
  const total = perPartition * Math.max(...RABBITMQ_PARTITIONS);
  const superStreams: string[] = [];
  const targets: string[] = [];
  try {
    const load = loadavg()[0] ?? Number.NaN;
    const layouts = new Map<number, string>();
    for (const partitions of RABBITMQ_PARTITIONS) {
      const name = `bench-scaling-${partitions}-${process.pid}`;
      const streams = await rabbit.createSuperStream(name, { partitions });
      superStreams.push(name);
      for (const stream of streams) await fill(rabbit, stream, 0, total / partitions);
      layouts.set(partitions, name);
    }
    const run = async (partitions: number): Promise<Cost> => {
      const target = `bench-scaling-results-${process.pid}-${targets.length}`;
      await rabbit.createStream(target);
      targets.push(target);
      const config: PartitionsWorkerConfig = {
        url,
        superStream: layouts.get(partitions) ?? '',
        target,
      };
      return workersCost(RABBITMQ_WORKER, partitions, config, total, brokerClock);
    };
    const rounds = await interleavedRounds(
      Object.fromEntries(RABBITMQ_PARTITIONS.map((p) => [`p${p}`, () => run(p)])),
      repeats,
    );
    const base = rounds.p1 ?? [];
    return RABBITMQ_PARTITIONS.map((partitions): CaseResult => {
      const costs = rounds[`p${partitions}`] ?? [];
      const brokerMs = costs.flatMap((cost) => cost.brokerCpuMs ?? []);
      const measured = brokerMs.length === costs.length;
      const shares = costs.map((cost) => {
        const brokerMs = cost.brokerCpuMs ?? Number.NaN;
        return brokerMs / (brokerMs + cost.cpuMs);
      });
      const onePartition = ratioSpread(wall(costs), wall(base));
      return {
        name: `scaling/rabbitmq/${partitions}-partitions`,
        kind: 'scaling',
        ...throughput(total, wall(costs)),
        ratios: partitions === 1 ? {} : { onePartition: onePartition.median },
        values: {
          ...(partitions === 1 ? {} : ratioRange('onePartition', onePartition)),
          ...perMessage('cpuUsPerMsg', costs, total, (cost) => cost.cpuMs),
          cpuPerMsgOverOnePartition: median(cpu(costs)) / median(cpu(base)),
          coresUsed: median(costs.map((cost) => cost.cpuMs / cost.wallMs)),
          ...(measured
            ? {
                ...perMessage('brokerCpuUsPerMsg', costs, total, (cost) => cost.brokerCpuMs ?? 0),
                brokerShareOfCpu: median(shares),
              }
            : {}),
        },
        notes: [loadNote(load), ...(measured ? [] : [notMeasured(broker) ?? ''])],
      };
    });
  } finally {
    for (const stream of targets) await rabbit.deleteStream(stream).catch(() => undefined);
    for (const name of superStreams) await rabbit.deleteSuperStream(name).catch(() => undefined);
    await rabbit.close();
  }
}

/**
 * One run of a `PartitionWorkers` job to caught up, from its first loop's start (every thread
 * built its job by then) to the run's end: wall, this process's CPU (every thread) and the
 * broker's. Fails unless the run stored results.
 */
async function workersCost(
  module: URL,
  workers: number,
  config: unknown,
  messages: number,
  brokerClock?: () => number,
): Promise<Cost> {
  const threads = new PartitionWorkers(module, { workers, config, imports: [REGISTER_TSX] });
  let start: { wall: number; cpu: number; broker: number | undefined } | undefined;
  threads.on('started', () => {
    start ??= { wall: performance.now(), cpu: cpuClock(), broker: brokerClock?.() };
  });
  const summary = await threads.run({ untilCaughtUp: true });
  const end = { wall: performance.now(), cpu: cpuClock(), broker: brokerClock?.() };
  await threads.close();
  if (start === undefined || summary.results === 0) {
    throw new Error(
      `scaling bench: ${workers} worker(s) stored no results of ${messages} messages`,
    );
  }
  return {
    wallMs: end.wall - start.wall,
    cpuMs: end.cpu - start.cpu,
    brokerCpuMs:
      start.broker === undefined || end.broker === undefined
        ? undefined
        : end.broker - start.broker,
  };
}

function wall(costs: readonly Cost[]): number[] {
  return costs.map((cost) => cost.wallMs);
}

function cpu(costs: readonly Cost[]): number[] {
  return costs.map((cost) => cost.cpuMs);
}

/** µs per message of one figure of the rounds: median, min and max. */
function perMessage(
  name: string,
  costs: readonly Cost[],
  messages: number,
  figure: (cost: Cost) => number,
): Record<string, number> {
  const spread = spreadOf(costs.map((cost) => (figure(cost) * 1000) / messages));
  return { [name]: spread.median, [`${name}Min`]: spread.min, [`${name}Max`]: spread.max };
}

function loadNote(atStart: number): string {
  const cores = cpus().length;
  const end = loadavg()[0] ?? Number.NaN;
  return `load average ${atStart.toFixed(1)} at the start, ${end.toFixed(1)} at the end, on ${cores} cores (above ${cores}, the rounds shared them with other work)`;
}
