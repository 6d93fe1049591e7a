/**
 * Before/after of a change anywhere in the engine, in the same run: the same jobs built through
 * the PUBLIC entry points (`src/index.ts`, `src/memory/index.ts`) of this tree and of an older
 * copy of the tree (`git archive <commit> src tsconfig.json package.json | tar -x -C /tmp/before`
 * and a node_modules link: without its tsconfig and package.json, tsx compiles the copy
 * differently, and an A/A run measured the copy 30% slower), so the comparison survives any
 * move of the internals. Each job reads the same pre-written source on the
 * embedded broker until caught up, in rotating interleaved rounds; CPU time of this process per
 * round is what is compared (on a shared machine wall time moves with the neighbours):
 *   npx tsx bench/ab-public.ts /tmp/before [messages] [rounds]
 * Prints, per job, CPU microseconds per message of each tree and the ratio after / before as
 * the median with the min-max of the rounds' ratios (below 1: the change is cheaper). The keys
 * are few (50): the figures of many open keys are the `event-time` case's.
 */
import { cpuClock, interleavedRounds, median, ratioSpread } from './measure.js';

const [beforeDir, messagesArg = '200000', roundsArg = '7'] = process.argv.slice(2);
if (beforeDir === undefined)
  throw new Error('usage: ab-public.ts <before dir> [messages] [rounds]');
const messages = Number(messagesArg);

/** The part of the public API the jobs use, the same in both trees. */
interface Tree {
  readonly api: typeof import('../src/index.js');
  readonly memory: typeof import('../src/memory/index.js');
}
const load = async (root: string): Promise<Tree> => ({
  api: (await import(`${root}/src/index.ts`)) as Tree['api'],
  memory: (await import(`${root}/src/memory/index.ts`)) as Tree['memory'],
});
const trees: Record<'before' | 'after', Tree> = {
  before: await load(beforeDir),
  after: await load(new URL('..', import.meta.url).pathname.replace(/\/$/, '')),
};

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}
const BATCH = 500;
/** Message i: one of 50 sensors, a value, an event time 100 ms apart with a 2-minute pause
 * every 1,000 messages (so sessions close). */
const reading = (i: number): Reading => ({
  sensor: `s${i % 50}`,
  value: (i * 7919) % 1000,
  t: 1_700_000_000_000 + i * 100 + Math.floor(i / 1000) * 120_000,
});

type Job =
  'count' | 'event-time tumbling' | 'event-time hopping' | 'event-time sessions' | 'batch packing';
const JOBS: readonly Job[] = [
  'count',
  'event-time tumbling',
  'event-time hopping',
  'event-time sessions',
  'batch packing',
];

/** A broker holding the source, written once per tree (each tree encodes its own messages). */
function sourceBroker(tree: Tree): InstanceType<Tree['memory']['MemoryBroker']> {
  const broker = new tree.memory.MemoryBroker();
  broker.createStream('readings');
  for (let first = 0; first < messages; first += BATCH) {
    const batch: Uint8Array[] = [];
    for (let i = first; i < Math.min(messages, first + BATCH); i++) {
      batch.push(tree.api.jsonMessage(reading(i)));
    }
    broker.append('readings', batch);
  }
  return broker;
}

/** Runs `job` of `tree` over a fresh copy of the source until caught up; the CPU ms it took. */
async function runOnce(tree: Tree, job: Job): Promise<number> {
  const broker = sourceBroker(tree);
  broker.createStream('results');
  const source = broker.source('readings');
  const target = broker.target('results', { producer: 'ab' });
  const sum = {
    init: () => 0,
    add: (a: number, r: Reading) => a + r.value,
    result: (a: number) => a,
  };
  const base = tree.api.aggregate<Reading>(source);
  const built =
    job === 'count'
      ? base
          .count(1000)
          .key((r) => r.sensor)
          .aggregate(sum)
          .to(target)
      : job === 'event-time tumbling'
        ? base
            .eventTime((r) => r.t)
            .tumbling('1m')
            .key((r) => r.sensor)
            .aggregate(sum)
            .to(target)
        : job === 'event-time hopping'
          ? base
              .eventTime((r) => r.t)
              .hopping('1m', '20s', { grace: '5s' })
              .key((r) => r.sensor)
              .aggregate(sum)
              .to(target)
          : job === 'event-time sessions'
            ? base
                .eventTime((r) => r.t)
                .key((r) => r.sensor)
                .session('1m')
                .aggregate(sum)
                .to(target)
            : base
                .count(1000)
                .key((r) => r.sensor)
                .aggregate(sum)
                .to(target, { pack: 'batch' });
  const started = cpuClock();
  await built.run({ untilCaughtUp: true });
  const ms = cpuClock() - started;
  if (broker.messages('results').length === 0) throw new Error(`${job}: no results`);
  return ms;
}

const tasks: Record<string, () => Promise<number>> = {};
for (const job of JOBS) {
  tasks[`${job} before`] = () => runOnce(trees.before, job);
  tasks[`${job} after`] = () => runOnce(trees.after, job);
}
const rounds = await interleavedRounds(tasks, Number(roundsArg));
const usPerMessage = (ms: readonly number[]): string =>
  ((median(ms) * 1000) / messages).toFixed(2).padStart(7);
console.log(`${messages} messages, ${roundsArg} rounds after a warm-up; CPU µs per message`);
for (const job of JOBS) {
  const before = rounds[`${job} before`] ?? [];
  const after = rounds[`${job} after`] ?? [];
  // ratioSpread compares throughputs (baseline / task); CPU per message is its inverse.
  const { median: m, min, max } = ratioSpread(before, after);
  console.log(
    `${job.padEnd(22)} before ${usPerMessage(before)}  after ${usPerMessage(after)}  after/before ${m.toFixed(3)} (${min.toFixed(3)}-${max.toFixed(3)})`,
  );
}
