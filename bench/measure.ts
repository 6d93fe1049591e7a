/**
 * Median wall time of each task over `repeats` rounds, after `warmup` untimed rounds.
 *
 * One call of a batch task (say 1M messages) is one sample, so tinybench's many-samples model
 * does not fit; and rounds are interleaved (A B C, A B C, ...) rather than run task by task,
 * so that load from other processes on a 2-core machine hits every side of a ratio alike.
 */
export function interleavedMedians<K extends string>(
  tasks: Readonly<Record<K, () => unknown>>,
  repeats: number,
  warmup = 1,
): Record<K, number> {
  const names = Object.keys(tasks) as K[];
  const samples = new Map<K, number[]>(names.map((name) => [name, []]));
  for (let round = 0; round < warmup + repeats; round++) {
    for (const name of names) {
      const started = performance.now();
      tasks[name]();
      const elapsed = performance.now() - started;
      if (round >= warmup) samples.get(name)?.push(elapsed);
    }
  }
  return Object.fromEntries(names.map((name) => [name, median(samples.get(name) ?? [])])) as Record<
    K,
    number
  >;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Throughput of `count` items done in `ms` milliseconds. */
export function perSecond(count: number, ms: number): number {
  return (count * 1000) / ms;
}
