import { readFileSync } from 'node:fs';
import type { PartitionedRunner } from '../src/partitioning/partitioned-runner.js';
import type { PartitionedSource, Target } from '../src/ports/ports.js';

/**
 * The failover case's probe (bench/failover.ts), in an instance's process: each moment of a
 * standby's way to its first result, once, as a line `probe <moment> <epoch ms> <cpu ms>
 * <queued ms>` on stdout, so that the bench sets it against the moment it sent the SIGKILL.
 * Epoch ms with a fraction (`performance.timeOrigin + performance.now()`): both processes read
 * the machine's clock. CPU and queued ms: the main thread's time on a CPU and waiting for one
 * in the run queue (/proc/self/schedstat; NaN where there is none), so that a part's wall
 * time splits into the job's work, the machine's load, and the rest: waiting for the broker.
 *
 * The resume point's round trips are timed where the runner asks them of its ports: the
 * target's `lastPublishingId` (asked first at an activation: it marks the activation) and
 * `readResult`, the source's `timestampAt`; the rest by the job's events (`standby`: joined
 * the group, the base of the activation's CPU and queued time).
 */
export const PROBE_MOMENTS = [
  'standby',
  'lastPublishingId',
  'lastPublishingIdAnswered',
  'readResult',
  'readResultAnswered',
  'timestampAt',
  'timestampAtAnswered',
  'started',
  'firstRead',
  'firstPublish',
  'firstConfirm',
] as const;

export type ProbeMoment = (typeof PROBE_MOMENTS)[number];

/** Tells a moment the first time it comes. */
export type Tell = (moment: ProbeMoment) => void;

/** A moment as the probe tells it: epoch ms, the main thread's CPU and queued ms by then. */
export interface ProbeLine {
  readonly moment: ProbeMoment;
  readonly at: number;
  readonly cpu: number;
  readonly queued: number;
}

/** The main thread's ms on a CPU and waiting in the run queue (NaN without /proc). */
function schedstat(): { cpu: number; queued: number } {
  try {
    const [onCpu, waiting] = readFileSync('/proc/self/schedstat', 'utf8').split(' ');
    return { cpu: Number(onCpu) / 1e6, queued: Number(waiting) / 1e6 };
  } catch {
    return { cpu: Number.NaN, queued: Number.NaN };
  }
}

/** A `Tell` writing probe lines through `say`. */
export function probeLines(say: (line: string) => void): Tell {
  const told = new Set<ProbeMoment>();
  return (moment) => {
    if (told.has(moment)) return;
    told.add(moment);
    const at = performance.timeOrigin + performance.now();
    const { cpu, queued } = schedstat();
    say(`probe ${moment} ${at.toFixed(3)} ${cpu.toFixed(3)} ${queued.toFixed(3)}`);
  };
}

/** Reads a probe line; undefined for any other line. */
export function parseProbeLine(line: string): ProbeLine | undefined {
  const [word, moment, at, cpu, queued] = line.split(' ');
  if (word !== 'probe' || !PROBE_MOMENTS.includes(moment as ProbeMoment)) return undefined;
  return {
    moment: moment as ProbeMoment,
    at: Number(at),
    cpu: Number(cpu),
    queued: Number(queued),
  };
}

/** `target` with its resume-point questions and first publish timed; the rest its own. */
export function probedTarget(target: Target, tell: Tell): Target {
  const timed =
    <A extends unknown[], R>(
      call: (...args: A) => Promise<R>,
      asked: ProbeMoment,
      answered: ProbeMoment,
    ) =>
    async (...args: A): Promise<R> => {
      tell(asked);
      const answer = await call(...args);
      tell(answered);
      return answer;
    };
  const own: Partial<Target> = {
    lastPublishingId: timed(
      () => target.lastPublishingId(),
      'lastPublishingId',
      'lastPublishingIdAnswered',
    ),
    readResult: timed(
      (...args: Parameters<Target['readResult']>) => target.readResult(...args),
      'readResult',
      'readResultAnswered',
    ),
    publish: (...args) => {
      tell('firstPublish');
      return target.publish(...args);
    },
  };
  // Everything else on the target itself (a class: its methods keep their `this`).
  return new Proxy(target, {
    get: (of, key) => {
      if (key in own) return own[key as keyof Target];
      const value: unknown = Reflect.get(of, key, of);
      return typeof value === 'function' ? (value as () => unknown).bind(of) : value;
    },
  });
}

/** `source` with each partition's `timestampAt` timed. */
export function probedSource(source: PartitionedSource, tell: Tell): PartitionedSource {
  return {
    ...source,
    partitions: async () =>
      (await source.partitions()).map((partition) => {
        if (partition.timestampAt === undefined) return partition;
        // A source's methods are own, bound properties: a spread keeps them.
        return {
          ...partition,
          timestampAt: async (offset: bigint) => {
            tell('timestampAt');
            const timestamp = await partition.timestampAt?.(offset);
            tell('timestampAtAnswered');
            return timestamp;
          },
        };
      }),
  };
}

/** The job's own moments: standing by, its resume point read, its first chunk and confirm. */
export function probeJob<T, A, R>(job: PartitionedRunner<T, A, R>, tell: Tell): void {
  job.on('standby', () => tell('standby'));
  job.on('started', () => tell('started'));
  job.on('read', () => tell('firstRead'));
  job.on('published', () => tell('firstConfirm'));
}
