/**
 * Before/after of a change to the publish path, in the same run, with this tree and an older
 * copy (`git archive <commit> src tsconfig.json package.json | tar -x -C /tmp/before` and a
 * node_modules link, as for ab-public.ts), each built through its public entry points
 * (`src/index.ts`, `src/rabbitmq/index.ts`), in rotating interleaved rounds:
 *   BROKER_PID=<beam.smp pid> npx tsx bench/ab-publish.ts /tmp/before [messages] [rounds] [publishes]
 * 1. The e2e job (1-second windows, 100 keys, `untilCaughtUp`; skipped when messages is 0),
 *    twice a round per tree: publishing its results to a fresh stream, and with a target that
 *    drops them (encoded and size-checked all the same). Per tree: publishing's share of the
 *    wall time (1 - discarded / published, round by round) and the CPU time per result that
 *    publishing adds (published - discarded, same round).
 * 2. The publishes alone: `publishes` (default 2,000) results of 3 KB a round through the
 *    engine's OrderedPublisher (maxInFlight 32), 1 or 4 of them per turn of the event loop (a
 *    job waiting for its source makes one per turn, one catching up a few). CPU time per
 *    publish, every confirm included: without the job's CPU around it, a steadier figure.
 * With `BROKER_PID`, the broker process's CPU time (utime + stime from /proc) as well; other
 * clients of the same broker add to it. Every figure: median (min-max of the rounds).
 */
import { readFileSync } from 'node:fs';
import type { Target } from '../src/ports/ports.js';
import { OrderedPublisher } from '../src/engine/ordered-publisher.js';
import { profileSource } from './e2e.js';
import type { Reading } from './corpus.js';
import { cpuClock, interleavedRounds, median } from './measure.js';

const [beforeDir, messagesArg = '1000000', roundsArg = '5', publishesArg = '2000'] =
  process.argv.slice(2);
if (beforeDir === undefined) {
  throw new Error('usage: ab-publish.ts <before dir> [messages] [rounds] [publishes]');
}
const messages = Number(messagesArg);
const rounds = Number(roundsArg);
const publishes = Number(publishesArg);
const url = process.env.RABBITMQ_STREAM_URL;
if (url === undefined || url === '') throw new Error('set RABBITMQ_STREAM_URL');
const brokerPid = process.env.BROKER_PID;

/** The part of the public API used here, the same in both trees. */
interface Tree {
  readonly api: typeof import('../src/index.js');
  readonly rabbit: typeof import('../src/rabbitmq/index.js');
}
const load = async (root: string): Promise<Tree> => ({
  api: (await import(`${root}/src/index.ts`)) as Tree['api'],
  rabbit: (await import(`${root}/src/rabbitmq/index.ts`)) as Tree['rabbit'],
});
const trees = {
  before: await load(beforeDir),
  after: await load(new URL('..', import.meta.url).pathname.replace(/\/$/, '')),
};
type Side = keyof typeof trees;
const SIDES: readonly Side[] = ['before', 'after'];
const adapters = {
  before: await trees.before.rabbit.connect(url),
  after: await trees.after.rabbit.connect(url),
};

/** CPU milliseconds the broker's process used so far (clock ticks of 10 ms). */
function brokerCpu(): number {
  if (brokerPid === undefined) return 0;
  const fields = readFileSync(`/proc/${brokerPid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU milliseconds of this process and of the broker per task and round, next to wall time. */
const cpu: Record<string, number[]> = {};
const broker: Record<string, number[]> = {};
async function measured(name: string, task: () => Promise<unknown>): Promise<number> {
  const cpuAt = cpuClock();
  const brokerAt = brokerCpu();
  const started = performance.now();
  await task();
  const ms = performance.now() - started;
  (cpu[name] ??= []).push(cpuClock() - cpuAt);
  (broker[name] ??= []).push(brokerCpu() - brokerAt);
  return ms;
}

let streams = 0;
/** Runs `task` with a fresh stream of `side`'s broker, deleted afterwards. */
async function withStream<T>(side: Side, task: (stream: string) => Promise<T>): Promise<T> {
  const stream = `bench-ab-publish-${process.pid}-${streams++}`;
  await adapters[side].createStream(stream);
  try {
    return await task(stream);
  } finally {
    await adapters[side].deleteStream(stream);
  }
}

const spread = (values: readonly number[], digits = 2): string =>
  `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;
/** `f` of two tasks' figures, round by round. */
const perRound = (
  a: readonly number[],
  b: readonly number[],
  f: (x: number, y: number) => number,
) => a.map((x, i) => f(x, b[i] ?? Number.NaN));
/** Drops the warm-up round's CPU times of `names`, as interleavedRounds drops its wall times. */
const dropWarmUp = (names: readonly string[]): void => {
  for (const name of names) {
    cpu[name]?.shift();
    broker[name]?.shift();
  }
};

if (messages > 0) {
  const source = await profileSource(adapters.after, url, messages);
  const results = Math.floor(messages / 1000) - 1;
  const runJob = (side: Side, target: Target) =>
    trees[side].api
      .aggregate<Reading>(adapters[side].source(source))
      .tumbling('1s')
      .key((reading) => reading.sensor)
      .reduce((total, reading) => total + reading.value, 0)
      .to(target)
      .run({ untilCaughtUp: true });
  /** The job's target minus the broker, as bench/e2e.ts's discardingTarget. */
  const discarding = (side: Side): Target => ({
    stream: source,
    producer: 'bench-discarded',
    maxWriteBytes: adapters[side].target(source, { producer: 'bench' }).maxWriteBytes,
    lastPublishingId: () => Promise.resolve(0n),
    hasPublished: () => Promise.resolve(false),
    readResult: () => Promise.resolve(undefined),
    publish: () => Promise.resolve(),
  });
  const tasks: Record<string, () => Promise<number>> = {};
  for (const side of SIDES) {
    tasks[`published ${side}`] = () =>
      withStream(side, (stream) =>
        measured(`published ${side}`, () =>
          runJob(side, adapters[side].target(stream, { producer: 'bench' })),
        ),
      );
    tasks[`discarded ${side}`] = () =>
      measured(`discarded ${side}`, () => runJob(side, discarding(side)));
  }
  const wall = await interleavedRounds(tasks, rounds);
  dropWarmUp(Object.keys(tasks));
  console.log(`e2e job: ${messages} messages, ${results} results, ${rounds} rounds`);
  for (const side of SIDES) {
    const [published, discarded] = [`published ${side}`, `discarded ${side}`];
    const rate = (name: string) => (messages / median(wall[name] ?? [])).toFixed(0);
    const perMessage = (name: string) =>
      spread((cpu[name] ?? []).map((ms) => (1000 * ms) / messages));
    const added = (from: Record<string, number[]>) =>
      spread(
        perRound(
          from[published] ?? [],
          from[discarded] ?? [],
          (p, d) => (1000 * (p - d)) / results,
        ),
        0,
      );
    console.log(
      `  ${side}: published ${rate(published)}k msg/s, discarded ${rate(discarded)}k msg/s`,
    );
    const share = perRound(wall[published] ?? [], wall[discarded] ?? [], (p, d) => 1 - d / p);
    console.log(`    publishing's share of the wall time ${spread(share)}`);
    console.log(
      `    job CPU µs per message: published ${perMessage(published)}, discarded ${perMessage(discarded)}`,
    );
    console.log(`    job CPU µs per result that publishing adds ${added(cpu)}`);
    if (brokerPid !== undefined)
      console.log(`    broker CPU µs per result it adds ${added(broker)}`);
  }
}

if (publishes > 0) {
  const result = new Uint8Array(3_000).fill(7);
  const loop = (side: Side, perTurn: number) => () =>
    withStream(side, async (stream) => {
      const target = adapters[side].target(stream, { producer: 'bench' });
      await target.lastPublishingId();
      const publisher = new OrderedPublisher(target, 32);
      return measured(`${side}/${perTurn}`, async () => {
        for (let i = 1; i <= publishes; i++) {
          await publisher.publish(BigInt(i), [result], () => undefined);
          // The next turn, as a job waiting for its source's next socket read.
          if (i % perTurn === 0) await new Promise((resolve) => setTimeout(resolve, 0));
        }
        await publisher.drain();
      });
    });
  await interleavedRounds(
    {
      before1: loop('before', 1),
      after1: loop('after', 1),
      before4: loop('before', 4),
      after4: loop('after', 4),
    },
    rounds,
  );
  dropWarmUp(['before/1', 'after/1', 'before/4', 'after/4']);
  console.log(`publishes alone: ${publishes} of 3 KB a round, ${rounds} rounds, µs per publish`);
  for (const perTurn of [1, 4]) {
    const of = (side: Side, from: Record<string, number[]>) =>
      spread(
        (from[`${side}/${perTurn}`] ?? []).map((ms) => (1000 * ms) / publishes),
        0,
      );
    const line = (from: Record<string, number[]>) =>
      `before ${of('before', from)}, after ${of('after', from)}`;
    console.log(`  ${perTurn} per turn: job CPU ${line(cpu)}`);
    if (brokerPid !== undefined) console.log(`  ${perTurn} per turn: broker CPU ${line(broker)}`);
  }
}
await adapters.before.close();
await adapters.after.close();
process.exit(0);
