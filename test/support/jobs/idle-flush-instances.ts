// Two instances of one job with an idle flush on one single active consumer source, handing
// the source over between flushes, on whichever broker a `FlushWorld` gives: the scenarios and
// what one instance reading at a time must leave (see the README's "Quiet sources", "Several
// instances"), shared by the embedded broker's test and RabbitMQ's.
import {
  aggregate,
  decodeResult,
  type FlushOptions,
  type Runner,
  type Source,
  type Target,
} from '../../../src/index.js';
import { T0, type Reading } from './memory-job.js';

/** The consumer group every instance's source joins. */
export const GROUP = 'idle-flush';

/** What a scenario needs of a broker: one source stream, one target stream. */
export interface FlushWorld {
  /** A new reader of the source stream in group GROUP. */
  source(): Source;
  /** A target of the target stream for instance `instance`: each on its own connection. */
  target(producer: string, instance: number): Target;
  /** Appends `reading` to the source as one chunk of its own. */
  append(reading: Reading): Promise<void>;
  /** Every message the target holds. */
  stored(): Promise<readonly Uint8Array[]>;
}

/** A job's run and events: what an instance of it needs. */
type Job = Pick<Runner<Reading, unknown, unknown>, 'run' | 'on'>;
export type JobOf = (world: FlushWorld, flush: FlushOptions, instance: number) => Job;

/** Each sensor's daily sum (a step window), publishing as 'daily'. */
export const dailyJob: JobOf = (world, flush, instance) =>
  aggregate<Reading>(world.source())
    .eventTime((r) => r.t)
    .tumbling('1d')
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(world.target('daily', instance), { retryDelayMs: 0, flush });

/** Each sensor's readings counted per 10 ms with 10 ms of grace (event-time windows). */
export const countsJob: JobOf = (world, flush, instance) =>
  aggregate<Reading>(world.source())
    .eventTime((r) => r.t)
    .key((r) => r.sensor)
    .tumbling(10, { grace: 10 })
    .aggregate({
      init: () => 0,
      add: (n: number) => n + 1,
      result: (n) => n,
      merge: (a, b) => a + b,
    })
    .to(world.target('counts', instance), { retryDelayMs: 0, flush });

/** A reading appended (one chunk) and flushed by the silence after it, or a handover. */
export type Step = Reading | 'handover';

const at = (sensor: string, value: number, t: number): Reading => ({ sensor, value, t });
const DAY = 86_400_000;

/**
 * Daily sums: instance 0 flushes day 0 twice, instance 1 takes over, goes on with day 0 (its
 * output marked continuing) and flushes day 1, instance 0 takes over again and goes on with
 * day 1. Per result: offsets, flushed, and per output key, value and continues mark.
 */
export const DAILY = {
  steps: [
    at('a', 1, T0),
    at('a', 2, T0 + 1),
    'handover',
    at('a', 4, T0 + 2),
    at('a', 8, T0 + DAY),
    'handover',
    at('a', 16, T0 + DAY + 1),
  ] satisfies Step[],
  results: [
    { offsets: [0n, 0n], flushed: true, outputs: [['a', 1, false]] },
    { offsets: [1n, 1n], flushed: true, outputs: [['a', 2, true]] },
    { offsets: [2n, 2n], flushed: true, outputs: [['a', 4, true]] },
    { offsets: [3n, 3n], flushed: true, outputs: [['a', 8, false]] },
    { offsets: [4n, 4n], flushed: true, outputs: [['a', 16, true]] },
  ],
  /** The ids each instance published. */
  published: [
    [0n, 1n, 4n],
    [2n, 3n],
  ],
};

/**
 * Event-time counts: flushed windows handed over twice, one of them closed by the watermark
 * after a handover. Per window (key@start), its readings; the ids each instance published.
 */
export const COUNTS = {
  steps: [
    at('a', 1, 5),
    at('b', 1, 12),
    'handover',
    at('a', 1, 7),
    at('b', 1, 25), // [0,10) closes: watermark 25 passes its end + grace
    'handover',
    at('b', 1, 27),
    at('a', 1, 60),
  ] satisfies Step[],
  counted: { 'a@0': 2, 'b@10': 1, 'b@20': 2, 'a@60': 1 },
  published: [
    [0n, 1n, 4n, 5n],
    [2n, 3n],
  ],
};

/** Per result: its offsets, whether flushed, and per output key, value and continues mark. */
export function shapeOf(bytes: Uint8Array) {
  const result = decodeResult(bytes);
  return {
    offsets: [result.firstOffset, result.lastOffset],
    flushed: result.flushed,
    outputs: result.outputs.map((o) => [o.key, o.value, o.continues]),
  };
}

/** Per window (`key@start`), the readings its outputs count, over every result given. */
export function countedPerWindow(stored: readonly Uint8Array[]): Record<string, number> {
  const counted: Record<string, number> = {};
  for (const { outputs } of stored.map((bytes) => decodeResult(bytes))) {
    for (const output of outputs) {
      const id = `${String(output.key)}@${output.start}`;
      counted[id] = (counted[id] ?? 0) + output.count;
    }
  }
  return counted;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One instance of a job: started and stopped at will; records the ids it saw confirmed, and
 * tells when it was first activated (its first start reads the resume point).
 */
function instance(job: Job) {
  const published: bigint[] = [];
  job.on('published', ({ lastOffset }) => published.push(lastOffset));
  const activated = new Promise<void>((resolve) => job.on('started', () => resolve()));
  let running: { stop: AbortController; done: Promise<unknown> } | undefined;
  return {
    published,
    activated,
    start(): void {
      const stop = new AbortController();
      running = { stop, done: job.run({ signal: stop.signal }) };
    },
    async stop(): Promise<void> {
      running?.stop.abort();
      await running?.done;
      running = undefined;
    },
  };
}

/**
 * Runs `steps` with `instances` instances of `jobOf` (flushing after `idleMs` of silence) on
 * one single active consumer source. At a handover the active one stops, the standby takes
 * over, and the stopped one joins again as standby. Each reading is appended once the one
 * before it is in the target: the silence after it flushes it. Returns what the target holds
 * and the ids each instance published.
 */
export async function runInstances(
  world: FlushWorld,
  jobOf: JobOf,
  steps: readonly Step[],
  { instances, idleMs }: { instances: 1 | 2; idleMs: number },
): Promise<{ stored: readonly Uint8Array[]; published: bigint[][] }> {
  const all = Array.from({ length: instances }, (_, index) =>
    instance(jobOf(world, { idleMs }, index)),
  );
  let [active, standby] = all;
  // The second joins once the first reads: it stands by until the first stops.
  active?.start();
  await active?.activated;
  standby?.start();
  let offset = 0n;
  for (const step of steps) {
    if (step === 'handover') {
      await active?.stop();
      [active, standby] = [standby, active];
      standby?.start();
      continue;
    }
    await world.append(step);
    while (!(await world.stored()).some((bytes) => decodeResult(bytes).lastOffset === offset)) {
      await sleep(10);
    }
    offset++;
  }
  await Promise.all(all.map((one) => one.stop()));
  return { stored: await world.stored(), published: all.map((one) => one.published) };
}
