/**
 * Wall time of each task in each of `repeats` rounds, after `warmup` untimed rounds.
 *
 * One call of a batch task (say 1M messages) is one sample, so tinybench's many-samples model
 * does not fit; and rounds are interleaved (A B C, A B C, ...) rather than run task by task,
 * so that load from other processes on a 2-core machine hits every side of a ratio alike.
 */
export function interleavedTimes<K extends string>(
  tasks: Readonly<Record<K, () => unknown>>,
  repeats: number,
  warmup = 1,
): Record<K, number[]> {
  const names = Object.keys(tasks) as K[];
  const rounds = Object.fromEntries(names.map((name) => [name, [] as number[]])) as Record<
    K,
    number[]
  >;
  for (let round = 0; round < warmup + repeats; round++) {
    for (const name of names) {
      const started = performance.now();
      tasks[name]();
      if (round >= warmup) rounds[name].push(performance.now() - started);
    }
  }
  return rounds;
}

/** Milliseconds of CPU this process used (every thread: the collector's helpers too). */
export function cpuClock(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Rounds of tasks that time themselves (each resolves to its own milliseconds, leaving its
 * set-up out, or to a `Cost`), awaited one at a time in an order that rotates every round:
 * a run leaves garbage whose collection the run after it pays for, which in a fixed order
 * would always be the same task. Returns every timed round per task, for per-round ratios.
 */
export async function interleavedRounds<K extends string, T = number>(
  tasks: Readonly<Record<K, () => Promise<T>>>,
  repeats: number,
  warmup = 1,
): Promise<Record<K, T[]>> {
  const names = Object.keys(tasks) as K[];
  const rounds = Object.fromEntries(names.map((name) => [name, [] as T[]])) as Record<K, T[]>;
  for (let round = 0; round < warmup + repeats; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(round + i) % names.length] as K;
      const ms = await tasks[name]();
      if (round >= warmup) rounds[name].push(ms);
    }
  }
  return rounds;
}

/** What a round cost: wall time, this process's CPU time (every thread) and the broker's, in ms. */
export interface Cost {
  readonly wallMs: number;
  readonly cpuMs: number;
  /** The broker's processes' CPU time; undefined when it is not measured (remote, not found). */
  readonly brokerCpuMs: number | undefined;
}

/** Runs `task` and returns its cost; `brokerClock` reads the broker's CPU ms when it is known. */
export async function costOf(task: () => unknown, brokerClock?: () => number): Promise<Cost> {
  const broker = brokerClock?.();
  const cpu = cpuClock();
  const started = performance.now();
  await task();
  const wallMs = performance.now() - started;
  const cpuMs = cpuClock() - cpu;
  return {
    wallMs,
    cpuMs,
    brokerCpuMs: broker === undefined ? undefined : (brokerClock?.() ?? broker) - broker,
  };
}

/** The median of some figures and the min–max of the rounds. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

export function spreadOf(values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/**
 * Throughput of `task` over `baseline` from their timed rounds (same messages each):
 * `median` is the ratio of the median rounds, `min`-`max` that of the ratios round by round.
 */
export function ratioSpread(task: readonly number[], baseline: readonly number[]): Spread {
  const perRound = task.map((ms, round) => (baseline[round] ?? Number.NaN) / ms);
  return {
    median: median(baseline) / median(task),
    min: Math.min(...perRound),
    max: Math.max(...perRound),
  };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The `p` quantile (0 to 1) of `values`, nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] as number;
}

/** Throughput of `count` items done in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return (count * 1000) / ms;
}
