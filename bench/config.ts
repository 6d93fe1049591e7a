/** Sizes of a bench run, from the environment; the defaults are the full sizes. */
export interface BenchConfig {
  /** Hot-path messages per case (BENCH_MESSAGES, default 1,000,000). */
  readonly messages: number;
  /** Timed rounds per case; medians are taken over them (BENCH_REPEATS, default 5). */
  readonly repeats: number;
  /** tinybench time budget per codec task, ms (BENCH_CODEC_MS, default 1,000). */
  readonly codecMs: number;
  /**
   * Messages a job reads through the Runner on the embedded broker, observed three ways
   * (BENCH_OBSERVE_MESSAGES, default a quarter of BENCH_MESSAGES).
   */
  readonly observeMessages: number;
  /** Messages of the end-to-end source stream (BENCH_E2E_MESSAGES, default 1,000,000). */
  readonly e2eMessages: number;
  /**
   * Messages of the partitioned job in all, split over its partitions
   * (BENCH_PARTITION_MESSAGES, default 1,000,000).
   */
  readonly partitionMessages: number;
  /** Kills of the failover case after its warm-up kill (BENCH_FAILOVER_KILLS, default 9). */
  readonly failoverKills: number;
  /** Adds counted for allocations per message (BENCH_MEMORY_ADDS, default 1,000,000). */
  readonly memoryAdds: number;
  /** Open keys for heap per key (BENCH_MEMORY_KEYS, default 10,000). */
  readonly memoryKeys: number;
  /** Deliver-sized frames cut from socket reads (BENCH_FRAMES, default 20,000: about 850 MB). */
  readonly frames: number;
  /**
   * Events the outbox-write case writes per round at 100 and 10,000 events per transaction
   * (BENCH_OUTBOX_WRITE_EVENTS, default 10,000), and at 1 per transaction, a commit each
   * (BENCH_OUTBOX_WRITE_SINGLE_EVENTS, default 1,000).
   */
  readonly outboxWriteEvents: number;
  readonly outboxWriteSingleEvents: number;
  /**
   * Rows the sink case applies per round at 100 and 1,000 messages per transaction
   * (BENCH_SINK_MESSAGES, default 10,000), and at 1 per transaction, a commit each
   * (BENCH_SINK_SINGLE_MESSAGES, default 1,000).
   */
  readonly sinkMessages: number;
  readonly sinkSingleMessages: number;
  /**
   * Rows the outbox case's writers commit per round at 100 and 1,000 rows per transaction
   * (BENCH_OUTBOX_ROWS, default 8,000: one transaction of 1,000 per writer with 8 writers), and
   * at 1 row per transaction (BENCH_OUTBOX_SINGLE_ROWS, default 1,000).
   */
  readonly outboxRows: number;
  readonly outboxSingleRows: number;
  /**
   * The `large-steps` case's steps, in keys (outputs) per step (BENCH_LARGE_STEP_KEYS, a
   * comma-separated list, default 10000,100000,1000000), and the step its restart is killed in
   * the middle of (BENCH_LARGE_STEP_RESTART_KEYS, default 1,000,000).
   */
  readonly largeStepKeys: readonly number[];
  readonly largeStepRestartKeys: number;
}

export function benchConfig(env: NodeJS.ProcessEnv = process.env): BenchConfig {
  const messages = positive(env, 'BENCH_MESSAGES', 1_000_000);
  return {
    messages,
    observeMessages: positive(env, 'BENCH_OBSERVE_MESSAGES', Math.ceil(messages / 4)),
    repeats: positive(env, 'BENCH_REPEATS', 5),
    codecMs: positive(env, 'BENCH_CODEC_MS', 1_000),
    e2eMessages: positive(env, 'BENCH_E2E_MESSAGES', 1_000_000),
    partitionMessages: positive(env, 'BENCH_PARTITION_MESSAGES', 1_000_000),
    failoverKills: positive(env, 'BENCH_FAILOVER_KILLS', 9),
    memoryAdds: positive(env, 'BENCH_MEMORY_ADDS', 1_000_000),
    memoryKeys: positive(env, 'BENCH_MEMORY_KEYS', 10_000),
    frames: positive(env, 'BENCH_FRAMES', 20_000),
    outboxWriteEvents: positive(env, 'BENCH_OUTBOX_WRITE_EVENTS', 10_000),
    outboxWriteSingleEvents: positive(env, 'BENCH_OUTBOX_WRITE_SINGLE_EVENTS', 1_000),
    sinkMessages: positive(env, 'BENCH_SINK_MESSAGES', 10_000),
    sinkSingleMessages: positive(env, 'BENCH_SINK_SINGLE_MESSAGES', 1_000),
    outboxRows: positive(env, 'BENCH_OUTBOX_ROWS', 8_000),
    outboxSingleRows: positive(env, 'BENCH_OUTBOX_SINGLE_ROWS', 1_000),
    largeStepKeys: positiveList(env, 'BENCH_LARGE_STEP_KEYS', [10_000, 100_000, 1_000_000]),
    largeStepRestartKeys: positive(env, 'BENCH_LARGE_STEP_RESTART_KEYS', 1_000_000),
  };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text.replaceAll('_', ''));
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be a positive integer, got '${text}'`);
  }
  return value;
}

function positiveList(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: readonly number[],
): readonly number[] {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  return text.split(',').map((item) => {
    const value = Number(item.trim().replaceAll('_', ''));
    if (item.trim() === '' || !Number.isSafeInteger(value) || value < 1) {
      throw new Error(`${name} must be positive integers separated by commas, got '${text}'`);
    }
    return value;
  });
}
