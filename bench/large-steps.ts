/**
 * The `large-steps` case (`npm run bench -- large-steps`; not part of a full run: its 1M-key
 * rounds take minutes): steps of many outputs on the real broker, which take several writes.
 *
 * The job is hourly totals per customer, `aggregate(source).tumbling('1h').key(customer)
 * .reduce(sum)`, over a source of one message per customer within one hour, then one message
 * of the next hour that closes it: one step of `keys` outputs.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  aggregate,
  readResults,
  readStepId,
  type JobEventMap,
  type Source,
  type Target,
} from '../src/index.js';
import { connect, type RabbitMQ } from '../src/rabbitmq/index.js';
import { forwarding } from '../test/support/doubles/forwarding-target.js';
import { brokerCpu, notMeasured } from './broker-cpu.js';
import {
  costOf,
  cpuClock,
  interleavedRounds,
  median,
  ratioSpread,
  spreadOf,
  type Cost,
} from './measure.js';
import { throughput, type CaseResult } from './report.js';

/** The keys of the baseline job: its step of 1,000 outputs fits one write. */
export const BASELINE_KEYS = 1_000;
/** The steps measured, in keys (outputs) per step. */
export const LARGE_STEP_KEYS = [10_000, 100_000, 1_000_000] as const;
/** The step a run is killed in the middle of, then restarted. */
export const RESTART_KEYS = 1_000_000;

const HOUR_MS = 3_600_000;
const START = Date.UTC(2026, 0, 1);
/** Sends awaited together while feeding a source. */
const FEED_BATCH = 20_000;
/** The job's producer name, in this process and in the killed child. */
export const PRODUCER = 'bench';

export interface Payment {
  readonly customer: string;
  readonly amount: number;
}

const payment = (i: number): Payment => ({ customer: `customer-${i}`, amount: (i % 100) + 1 });

/** Sum of the amounts of customers 0 .. keys - 1: the step's outputs add up to it. */
const totalOf = (keys: number): number => {
  let total = 0;
  for (let i = 0; i < keys; i++) total += payment(i).amount;
  return total;
};

/** The job, the same in this process and in the child that is killed (its definition is checked). */
export function hourlyTotals(source: Source, target: Target) {
  return aggregate<Payment>(source)
    .tumbling('1h')
    .key((p) => p.customer)
    .reduce((sum, p) => sum + p.amount, 0)
    .to(target);
}

/**
 * Writes one message per customer (`keys` of them, creation times spread over the hour from
 * START), then, once they are confirmed, one message of the next hour: it closes the hour, and
 * is a chunk of its own, so the read that closes the step holds nothing else.
 */
async function feedHour(rabbit: RabbitMQ, stream: string, keys: number): Promise<void> {
  const producer = rabbit.producer(stream, { maxInFlight: 4_096 });
  try {
    for (let at = 0; at < keys; at += FEED_BATCH) {
      const sends: Promise<bigint>[] = [];
      for (let i = at; i < Math.min(keys, at + FEED_BATCH); i++) {
        sends.push(
          producer.send(payment(i), { creationTime: START + Math.floor((i * HOUR_MS) / keys) }),
        );
      }
      await Promise.all(sends);
    }
    await producer.send({ customer: 'customer-0', amount: 0 }, { creationTime: START + HOUR_MS });
  } finally {
    await producer.close();
  }
}

/** What one run of the job did and cost. */
interface StepRun {
  /** The whole run, `run()` called to returned (this process's CPU, the broker's when known). */
  readonly cost: Cost;
  /** From `run()` to the `published` event of the step: its last write confirmed. */
  readonly startToLastWriteMs: number;
  /** From the `read` event of the chunk holding the closing message to `published`. */
  readonly closeToLastWriteMs: number;
  /** This process's CPU ms over that span (every thread), and the broker's when it is known. */
  readonly closeCpuMs: number;
  readonly closeBrokerCpuMs: number | undefined;
  /** The `published` event's own `processingMs` (from reading that chunk to the confirm). */
  readonly processingMs: number;
  /** Writes the job issued for the step (Target.publish calls) and their bytes. */
  readonly writes: number;
  readonly bytes: number;
  readonly published: JobEventMap['published'];
  readonly results: number;
}

/**
 * Runs the job over `source` (`untilCaughtUp`) into `target`, counting its writes, and times
 * the step: the source's offset `keys` is the closing message.
 */
async function runStep(
  source: Source,
  target: Target,
  keys: number,
  brokerClock: (() => number) | undefined,
): Promise<StepRun> {
  let writes = 0;
  let bytes = 0;
  const counting: Target = {
    ...forwarding(target),
    publish: (id, messages) => {
      writes++;
      for (const message of messages) bytes += message.length;
      return target.publish(id, messages);
    },
  };
  const closing = BigInt(keys);
  let runAt = Number.NaN;
  let closeReadAt = Number.NaN;
  let closeCpu = Number.NaN;
  let closeBroker: number | undefined;
  let publishedAt = Number.NaN;
  let publishedCpu = Number.NaN;
  let publishedBroker: number | undefined;
  let published: JobEventMap['published'] | undefined;
  const runner = hourlyTotals(source, counting);
  runner.on('read', (event) => {
    if (event.firstOffset <= closing && closing < event.firstOffset + BigInt(event.messages)) {
      closeBroker = brokerClock?.();
      closeCpu = cpuClock();
      closeReadAt = performance.now();
    }
  });
  runner.on('published', (event) => {
    publishedAt = performance.now();
    publishedCpu = cpuClock();
    publishedBroker = brokerClock?.();
    published = event;
  });
  let results = 0;
  const cost = await costOf(async () => {
    runAt = performance.now();
    results = (await runner.run({ untilCaughtUp: true })).results;
  }, brokerClock);
  if (published === undefined || published.outputs !== keys || published.duplicate) {
    throw new Error(
      `large-steps bench: the job published ${JSON.stringify(published?.outputs)} outputs ` +
        `(duplicate: ${String(published?.duplicate)}), not one step of ${keys}`,
    );
  }
  return {
    cost,
    startToLastWriteMs: publishedAt - runAt,
    closeToLastWriteMs: publishedAt - closeReadAt,
    closeCpuMs: publishedCpu - closeCpu,
    closeBrokerCpuMs:
      closeBroker === undefined || publishedBroker === undefined
        ? undefined
        : publishedBroker - closeBroker,
    processingMs: published.processingMs,
    writes,
    bytes,
    published,
    results,
  };
}

/** Median, min and max of some figures as `values` entries: `name`, `nameMin`, `nameMax`. */
function figures(name: string, values: readonly number[]): Record<string, number> {
  const spread = spreadOf(values);
  return { [name]: spread.median, [`${name}Min`]: spread.min, [`${name}Max`]: spread.max };
}

/**
 * Case 1, `tumbling-1h/<keys>-keys`: the job over each source (one step of `keys` outputs,
 * read from a stream of `keys` + 1 messages), a fresh target stream per run, in rotating
 * interleaved rounds with the baseline, the same job over 1,000 keys (one write). Per round:
 * messages/s through the job (wall, `run()` to returned), CPU ms per 1,000 messages (this
 * process, every thread; the broker's when it is the local one), the ms from reading the
 * closing message to the step's last write confirmed and the CPU ms over that span (this
 * process's, the broker's), and the step's writes and bytes.
 * Ratios are per message: this job's throughput over the baseline's, by wall (`ratios`) and
 * by CPU (`…ByCpu` in values), the medians' ratio with the min–max of the per-round ratios.
 *
 * Case 2 (unless `restartKeys` is 0), `restart-mid-step/<restartKeys>-keys`: per round, the
 * job runs in a child process (bench/large-steps-child.ts) that kills itself with SIGKILL once
 * half of the step's writes (rounded up) are confirmed, the later ones held back; the broker's
 * last publishing id must then name that write of the step, not its last. The job then starts
 * again in this process: the ms from `run()` to the step's last write confirmed. Its target
 * must then hold the step once and whole (readResults: one result, `keys` outputs of distinct
 * keys adding up to the source's amounts, as many messages as an uninterrupted run's
 * target). Baseline (`fresh`): the same job on a fresh target, nothing stored, in the same
 * rotating rounds; `values` has both times and CPU ms, the writes and those stored at the kill.
 * target, nothing stored, in the same rotating rounds.
 */
export async function largeStepCases(
  url: string,
  repeats: number,
  keysList: readonly number[] = LARGE_STEP_KEYS,
  restartKeys: number = RESTART_KEYS,
): Promise<CaseResult[]> {
  const broker = brokerCpu(url);
  const bench = new Bench(url, await connect(url), broker.measured ? broker.cpuMs : undefined);
  try {
    const sizes = [BASELINE_KEYS, ...keysList.filter((keys) => keys !== BASELINE_KEYS)];
    for (const keys of sizes) await bench.sourceOf(keys);
    if (restartKeys > 0) await bench.sourceOf(restartKeys);
    const stepRounds = await interleavedRounds(
      Object.fromEntries(sizes.map((keys) => [String(keys), () => bench.runOnce(keys)])),
      repeats,
    );
    const results = sizes.map((keys) =>
      stepCase(keys, stepRounds[String(keys)] ?? [], stepRounds[String(BASELINE_KEYS)] ?? []),
    );
    if (restartKeys > 0) results.push(await restartCase(bench, restartKeys, repeats));
    const note = notMeasured(broker);
    return note === undefined ? results : results.map((result) => ({ ...result, notes: [note] }));
  } finally {
    await bench.close();
  }
}

/** The broker link, the sources fed so far, and the streams to delete at the end. */
class Bench {
  private readonly sources = new Map<number, string>();
  private readonly streams = new Set<string>();
  private count = 0;

  constructor(
    readonly url: string,
    readonly rabbit: RabbitMQ,
    readonly brokerClock: (() => number) | undefined,
  ) {}

  async newStream(role: string): Promise<string> {
    const stream = `bench-large-${role}-${process.pid}-${this.count++}`;
    await this.rabbit.createStream(stream);
    this.streams.add(stream);
    return stream;
  }

  async dropStream(stream: string): Promise<void> {
    await this.rabbit.deleteStream(stream).catch(() => undefined);
    this.streams.delete(stream);
  }

  /** The source of `keys` customers, fed the first time it is asked for. */
  async sourceOf(keys: number): Promise<string> {
    const known = this.sources.get(keys);
    if (known !== undefined) return known;
    const stream = await this.newStream(`in-${keys}`);
    await feedHour(this.rabbit, stream, keys);
    this.sources.set(keys, stream);
    return stream;
  }

  /** One run over `keys`' source into a fresh target, deleted after; `check` sees it first. */
  async runOnce(
    keys: number,
    check?: (target: string, run: StepRun) => Promise<void>,
  ): Promise<StepRun> {
    const target = await this.newStream(`out-${keys}`);
    try {
      const run = await this.run(keys, target);
      await check?.(target, run);
      return run;
    } finally {
      await this.dropStream(target);
    }
  }

  /** The job over `keys`' source into `target`, as producer PRODUCER. */
  async run(keys: number, target: string): Promise<StepRun> {
    const publisher = this.rabbit.target(target, { producer: PRODUCER });
    try {
      const source = this.rabbit.source(await this.sourceOf(keys));
      return await runStep(source, publisher, keys, this.brokerClock);
    } finally {
      await publisher.close();
    }
  }

  async close(): Promise<void> {
    for (const stream of [...this.streams]) await this.dropStream(stream);
    await this.rabbit.close();
  }
}

/** A restart's round: its run, the writes stored at the kill, and when the child was killed. */
interface RestartRound {
  readonly run: StepRun;
  readonly stored: number;
  readonly killAfter: number;
}

/** Case 2 (see `largeStepCases`). */
async function restartCase(bench: Bench, keys: number, repeats: number): Promise<CaseResult> {
  const { rabbit } = bench;
  // Learned from the uninterrupted runs, which the rotation runs first in the warm-up round.
  let stepWrites: number | undefined;
  let stepMessages: bigint | undefined;
  const rounds = await interleavedRounds<'fresh' | 'restart', StepRun | RestartRound>(
    {
      fresh: () =>
        bench.runOnce(keys, async (target, run) => {
          stepWrites = run.writes;
          stepMessages = await rabbit.source(target).endOffset();
        }),
      restart: async () => {
        if (stepWrites === undefined || stepMessages === undefined) {
          throw new Error('large-steps bench: the restart ran before an uninterrupted run');
        }
        if (stepWrites < 2) {
          throw new Error(`large-steps bench: a step of ${keys} outputs took one write`);
        }
        const target = await bench.newStream(`restart-${keys}`);
        try {
          const killAfter = Math.ceil(stepWrites / 2);
          await killedChild(bench.url, await bench.sourceOf(keys), target, killAfter);
          const stored = await storedWrites(rabbit, target);
          if (stored !== killAfter) {
            throw new Error(
              `large-steps bench: ${stored} writes stored at the kill, not ${killAfter}`,
            );
          }
          const run = await bench.run(keys, target);
          await expectWholeOnce(rabbit, target, keys, stepMessages);
          return { run, stored, killAfter };
        } finally {
          await bench.dropStream(target);
        }
      },
    },
    repeats,
  );
  const freshRuns = rounds.fresh as StepRun[];
  const restarts = rounds.restart as RestartRound[];
  const fresh = freshRuns.map((run) => run.startToLastWriteMs);
  const restart = restarts.map((round) => round.run.startToLastWriteMs);
  const vsFresh = ratioSpread(restart, fresh);
  return {
    name: `restart-mid-step/${keys}-keys`,
    kind: 'large-steps',
    msgsPerSec: Number.NaN,
    ratios: { fresh: vsFresh.median },
    values: {
      freshMin: vsFresh.min,
      freshMax: vsFresh.max,
      ...figures('startToLastWriteMs', restart),
      ...figures('freshStartToLastWriteMs', fresh),
      ...figures(
        'cpuMs',
        restarts.map((round) => round.run.cost.cpuMs),
      ),
      ...figures(
        'freshCpuMs',
        freshRuns.map((run) => run.cost.cpuMs),
      ),
      writes: stepWrites ?? Number.NaN,
      // What the restart sent: the writes the broker held are sent again and discarded.
      restartWrites: median(restarts.map((round) => round.run.writes)),
      killedAfterConfirmed: restarts[0]?.killAfter ?? Number.NaN,
      ...figures(
        'writesStoredAtKill',
        restarts.map((round) => round.stored),
      ),
      stepMessages: Number(stepMessages),
    },
  };
}

/** Case 1's line for `keys`, against the baseline's rounds. */
function stepCase(
  keys: number,
  runs: readonly StepRun[],
  baseline: readonly StepRun[],
): CaseResult {
  const messages = keys + 1;
  const baseMessages = BASELINE_KEYS + 1;
  // Per message, so that the ratios compare steps of different sizes.
  const wallPerMsg = (list: readonly StepRun[], n: number) => list.map((r) => r.cost.wallMs / n);
  const cpuPerMsg = (list: readonly StepRun[], n: number) => list.map((r) => r.cost.cpuMs / n);
  const byWall = ratioSpread(wallPerMsg(runs, messages), wallPerMsg(baseline, baseMessages));
  const byCpu = ratioSpread(cpuPerMsg(runs, messages), cpuPerMsg(baseline, baseMessages));
  const base = `${BASELINE_KEYS}-keys`;
  const brokerMs = runs.flatMap((r) => r.cost.brokerCpuMs ?? []);
  const closeBrokerMs = runs.flatMap((r) => r.closeBrokerCpuMs ?? []);
  return {
    name: `tumbling-1h/${keys}-keys`,
    kind: 'large-steps',
    ...throughput(
      messages,
      runs.map((r) => r.cost.wallMs),
    ),
    ratios: { [base]: byWall.median },
    values: {
      [`${base}Min`]: byWall.min,
      [`${base}Max`]: byWall.max,
      [`${base}ByCpu`]: byCpu.median,
      [`${base}ByCpuMin`]: byCpu.min,
      [`${base}ByCpuMax`]: byCpu.max,
      ...figures(
        'cpuMsPer1000Msgs',
        runs.map((r) => (r.cost.cpuMs * 1000) / messages),
      ),
      ...(brokerMs.length === runs.length
        ? figures(
            'brokerCpuMsPer1000Msgs',
            brokerMs.map((ms) => (ms * 1000) / messages),
          )
        : {}),
      ...figures(
        'closeToLastWriteMs',
        runs.map((r) => r.closeToLastWriteMs),
      ),
      ...figures(
        'closeCpuMs',
        runs.map((r) => r.closeCpuMs),
      ),
      ...(closeBrokerMs.length === runs.length ? figures('closeBrokerCpuMs', closeBrokerMs) : {}),
      processingMs: median(runs.map((r) => r.processingMs)),
      ...figures(
        'runMs',
        runs.map((r) => r.cost.wallMs),
      ),
      writes: median(runs.map((r) => r.writes)),
      stepMB: median(runs.map((r) => r.bytes)) / 1e6,
      outputs: keys,
    },
  };
}

/** The child's job, killed with SIGKILL at the confirm of its `killAfter`-th write. */
function killedChild(url: string, source: string, target: string, killAfter: number) {
  const module = new URL('./large-steps-child.ts', import.meta.url);
  return new Promise<void>((resolve, reject) => {
    const child = fork(fileURLToPath(module), [url, source, target, String(killAfter)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve();
      else reject(new Error(`large-steps bench: the child exited with ${code} before its kill`));
    });
  });
}

/** Writes of the step the broker holds for the producer: its last id must be inside the step. */
async function storedWrites(rabbit: RabbitMQ, stream: string): Promise<number> {
  const publisher = rabbit.target(stream, { producer: PRODUCER });
  try {
    const id = await publisher.lastPublishingId();
    const step = readStepId(id);
    if (step.kind !== 'write' || step.last) {
      throw new Error(
        `large-steps bench: after the kill the last publishing id ${id} is ` +
          `${JSON.stringify(step, bigints)}, not a write inside the step`,
      );
    }
    return step.write + 1;
  } finally {
    await publisher.close();
  }
}

/**
 * The target holds the step once and whole: readResults gives one result of `keys` outputs,
 * of distinct customers, adding up to the source's amounts, and the stream holds as many
 * messages as an uninterrupted run's target (no part twice).
 */
async function expectWholeOnce(
  rabbit: RabbitMQ,
  stream: string,
  keys: number,
  messages: bigint,
): Promise<void> {
  const source = rabbit.source(stream);
  const stored = await source.endOffset();
  let steps = 0;
  let outputs = 0;
  let total = 0;
  const customers = new Set<string>();
  for await (const { result } of readResults<number>(source, { untilCaughtUp: true })) {
    steps++;
    outputs += result.outputs.length;
    for (const output of result.outputs) {
      total += output.value;
      customers.add(String(output.key));
    }
  }
  const expected = {
    steps: 1,
    outputs: keys,
    customers: keys,
    total: totalOf(keys),
    stored: messages,
  };
  const actual = { steps, outputs, customers: customers.size, total, stored };
  if (JSON.stringify(actual, bigints) !== JSON.stringify(expected, bigints)) {
    throw new Error(
      `large-steps bench: the restarted target holds ${JSON.stringify(actual, bigints)}, ` +
        `expected ${JSON.stringify(expected, bigints)}`,
    );
  }
}

const bigints = (_: string, value: unknown): unknown =>
  typeof value === 'bigint' ? String(value) : value;
