// A partitioned stage 1 and its global stage 2 on RabbitMQ, both killed with SIGKILL at random
// moments while the readings are written: a 4-partition super stream is written a round at a
// time, each round once both stages have been killed again; stage 1 (one child running the job
// of each partition) and stage 2 (the total per minute over stage 1's result streams,
// `mergeInputs([fromResults(...), ...])`, in a child of its own) are restarted after each kill
// and resume from their last results. Every stage-1 result stream and stage 2's totals must then
// equal, byte for byte, an uninterrupted run of the two stages on the embedded broker, and the
// totals what the readings add up to. Then with two stage-2 instances at once under one producer
// name, each killed on its own; then with two whose first input is read in a single active
// consumer group: the active one is killed again and again, the standby takes over, publishing
// nothing while it stands by.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { decodeResult, jsonMessage } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bundledForFile } from '../support/children/bundled-child.js';
import { runChild, startChild } from '../support/children/killed-child.js';
import {
  MARKERS_FROM,
  PARTITIONS,
  SECTIONS,
  STAGE_TWO_PRODUCER,
  readingsOf,
  referenceTotals,
  stageOne,
  stageOneProducer,
  stageTwo,
} from '../support/jobs/two-stage-readings.js';
import { bound } from '../support/timing.js';

/** Readings per partition: about 90 minutes of event time, about 90 results of each stage. */
const READINGS = 1_200;
const GROUP = 'two-stage-totals';
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const superStreams: string[] = [];
const childPath = bundledForFile(new URL('./two-stage-child.ts', import.meta.url), bound(60_000));

afterAll(async () => {
  for (const name of superStreams) await real.rabbit.deleteSuperStream(name);
});

/** The partitions' readings, as messages, by partition. */
const inputs = Array.from({ length: PARTITIONS }, (_, p) =>
  readingsOf(p, READINGS).map((reading) => jsonMessage(reading)),
);

interface Pipeline {
  readonly partitions: readonly string[];
  readonly results: readonly string[];
  readonly totals: string;
}

async function newPipeline(): Promise<Pipeline> {
  const superStream = uniqueStream('tsk-readings');
  superStreams.push(superStream);
  const partitions = await real.rabbit.createSuperStream(superStream, { partitions: PARTITIONS });
  const results: string[] = [];
  for (let p = 0; p < PARTITIONS; p++) results.push(await real.newStream(`tsk-per-sensor-${p}`));
  const totals = await real.newStream('tsk-totals');
  return { partitions, results, totals };
}

/** Every stream the stages wrote, in hex (quick to compare), by name. */
type Written = Record<string, string[]>;

const hex = (results: readonly Uint8Array[]): string[] =>
  results.map((bytes) => Buffer.from(bytes).toString('hex'));

/** The streams an uninterrupted run of both stages writes on the embedded broker. */
async function uninterrupted({ partitions, results, totals }: Pipeline): Promise<Written> {
  const broker = new MemoryBroker();
  for (const stream of [...partitions, ...results, totals]) broker.createStream(stream);
  partitions.forEach((partition, p) => broker.append(partition, inputs[p] as Uint8Array[]));
  for (const [p, partition] of partitions.entries()) {
    await stageOne(
      broker.source(partition),
      broker.target(results[p] as string, { producer: stageOneProducer(p) }),
      SECTIONS,
    ).run({ untilCaughtUp: true });
  }
  await stageTwo(
    results.map((stream) => broker.source(stream)),
    broker.target(totals, { producer: STAGE_TWO_PRODUCER }),
  ).run({ untilCaughtUp: true });
  const written: Written = {};
  for (const stream of [...results, totals]) {
    written[stream] = hex(broker.messages(stream).map((message) => message.bytes));
  }
  return written;
}

async function onRabbit({ results, totals }: Pipeline): Promise<Written> {
  const written: Written = {};
  for (const stream of [...results, totals])
    written[stream] = hex(await readAll(real.rabbit, stream));
  return written;
}

/** What the kills of one stage did. */
interface StageKills {
  killed: number;
  /** Kills that came after the run had handed a result to the broker. */
  publishing: number;
}

/** What the instances of stage 2 in a consumer group did. */
interface GroupWatch {
  /** Activations of an instance that stood by while another was killed. */
  takeovers: number;
  /** Results handed to the broker by an instance standing by: must stay 0. */
  publishedStandingBy: number;
}

/** Stage 1 publishes for four partitions at once (about 6 results each a round). */
const STAGE_ONE_PUBLISHES = 2 * PARTITIONS;
const STAGE_TWO_PUBLISHES = 4;

/**
 * Runs a child once, killed with SIGKILL at its 1st to `maxPublishes`th publish (stage 1
 * prints its partition's number at each, stage 2 'p'), or one time in four (always when
 * `atMomentOnly`) at a random moment 50 to 350 ms after it started (while it starts, reads
 * its resume point or its inputs, or publishes; for an instance in a group: up to 50 ms after
 * it was activated) instead, unless it caught up and exited first. Counts its kill in
 * `kills`; true when it was killed.
 */
async function runKilled(
  args: readonly string[],
  random: () => number,
  maxPublishes: number,
  kills: StageKills,
  { atMomentOnly = false, group }: { atMomentOnly?: boolean; group?: GroupWatch | undefined },
): Promise<boolean> {
  const afterPublishes = 1 + Math.floor(random() * maxPublishes);
  // A run takes little more than its start: an instance in a group is killed soon after it
  // was activated, others while they start, read, or publish.
  const moment = group === undefined ? 50 + random() * 300 : random() * 50;
  const atMoment = atMomentOnly || random() < 0.25 ? moment : undefined;
  let published = 0;
  let timer: NodeJS.Timeout | undefined;
  let standingSince: number | undefined;
  const arm = (): void => {
    if (atMoment !== undefined) timer ??= setTimeout(() => started.kill(), atMoment);
  };
  const started = startChild(childPath(), args, (mark) => {
    if (mark === 's') standingSince = kills.killed;
    if (mark === 'a' && group !== undefined) {
      if (standingSince !== undefined && kills.killed > standingSince) group.takeovers++;
      standingSince = undefined;
      arm();
    }
    if (mark !== 'p' && !/[0-9]/.test(mark)) return;
    if (standingSince !== undefined && group !== undefined) group.publishedStandingBy++;
    if (++published >= afterPublishes && atMoment === undefined) started.kill();
  });
  if (group === undefined) arm();
  try {
    if (!(await started.ended)) return false;
    kills.killed++;
    if (published > 0) kills.publishing++;
    return true;
  } finally {
    clearTimeout(timer);
  }
}

interface Variant {
  /** Stage-2 instances at once under one producer name. */
  readonly instances: number;
  /** Whether stage 2's first input is read in a single active consumer group. */
  readonly grouped: boolean;
  /** Rounds of writing: each stage is killed at least once per round. */
  readonly rounds: number;
}

/**
 * Both stages killed and restarted while the readings are written, a round at a time, then
 * each run to completion, stage 1 first. In each round: the round's readings are written;
 * stage 1 is killed (run again until a run is killed) while every stage-2 instance runs once,
 * killed or caught up; stage 1 runs to its end; then the stage-2 instances run at once until
 * one is killed, with the round's totals to publish. Returns what RabbitMQ holds and what an
 * uninterrupted run writes.
 */
async function killedWhileWriting(
  { instances, grouped, rounds }: Variant,
  seed: number,
): Promise<{ actual: Written; expected: Written; pipeline: Pipeline }> {
  const pipeline = await newPipeline();
  const path = childPath();
  const stageOneArgs = ['stage1', url, ...pipeline.partitions, ...pipeline.results];
  const stageTwoArgs = ['stage2', url, pipeline.totals, grouped ? GROUP : '-', ...pipeline.results];
  const random = seededRandom(seed);
  const began = Date.now();
  const stage1: StageKills = { killed: 0, publishing: 0 };
  const stage2: StageKills = { killed: 0, publishing: 0 };
  const group: GroupWatch = { takeovers: 0, publishedStandingBy: 0 };
  const feeders = pipeline.partitions.map((partition) =>
    real.rabbit.target(partition, { producer: 'feeder' }),
  );
  /** Runs `run` until one of its runs is killed; each later run killed at a random moment. */
  const untilKilled = async (run: (atMomentOnly: boolean) => Promise<boolean>): Promise<void> => {
    for (let atMomentOnly = false; !(await run(atMomentOnly)); atMomentOnly = true);
  };
  const stageTwoOnce = async (atMomentOnly: boolean): Promise<boolean> => {
    const options = { atMomentOnly, group: grouped ? group : undefined };
    const killed = await Promise.all(
      Array.from({ length: instances }, () =>
        runKilled(stageTwoArgs, random, STAGE_TWO_PUBLISHES, stage2, options),
      ),
    );
    return killed.some(Boolean);
  };
  try {
    for (let round = 0; round < rounds; round++) {
      // Each partition's share of the round, in a random order of the partitions.
      const order = [...pipeline.partitions.keys()].sort(() => random() - 0.5);
      for (const p of order) {
        const all = inputs[p] as Uint8Array[];
        const share = all.slice((round * all.length) / rounds, ((round + 1) * all.length) / rounds);
        await (feeders[p] as (typeof feeders)[number]).publish(BigInt(round), share);
      }
      await Promise.all([
        untilKilled((atMomentOnly) =>
          runKilled(stageOneArgs, random, STAGE_ONE_PUBLISHES, stage1, { atMomentOnly }),
        ),
        stageTwoOnce(false),
      ]);
      expect(await runChild(path, stageOneArgs)).toBe(false);
      await untilKilled(stageTwoOnce);
    }
  } finally {
    for (const feeder of feeders) await feeder.close();
  }
  // Each to the end: stage 1 first, then every stage-2 instance at once (in a group, one
  // after the other as the group activates them).
  expect(await runChild(path, stageOneArgs)).toBe(false);
  const completed = await Promise.all(
    Array.from({ length: instances }, () => runChild(path, stageTwoArgs)),
  );
  expect(completed.every((wasKilled) => !wasKilled)).toBe(true);
  console.log(
    `two-stage SIGKILL test (seed ${seed}): ${instances} stage-2 instance(s)${grouped ? ' in a group' : ''}, ` +
      `stage 1 killed ${stage1.killed} times (${stage1.publishing} after a publish), ` +
      `stage 2 ${stage2.killed} times (${stage2.publishing} after a publish)` +
      (grouped ? `, ${group.takeovers} takeovers by a standby` : '') +
      `, ${rounds} rounds of ${READINGS} readings per partition, ${Date.now() - began} ms`,
  );
  expect(stage1.killed).toBeGreaterThanOrEqual(rounds);
  expect(stage2.killed).toBeGreaterThanOrEqual(rounds);
  // Kills land while results go to the broker, not all at a start.
  expect(stage1.publishing).toBeGreaterThanOrEqual(rounds / 4);
  expect(stage2.publishing).toBeGreaterThanOrEqual(rounds / 4);
  if (grouped) {
    expect(group.publishedStandingBy).toBe(0);
    expect(group.takeovers).toBeGreaterThanOrEqual(rounds / 3);
  }
  return { actual: await onRabbit(pipeline), expected: await uninterrupted(pipeline), pipeline };
}

/**
 * No result lost, none twice, in either stage: every stream as the uninterrupted run wrote it,
 * and stage 2's totals what the readings add up to.
 */
function expectUninterrupted({
  actual,
  expected,
  pipeline,
}: {
  actual: Written;
  expected: Written;
  pipeline: Pipeline;
}): void {
  for (const stream of [...pipeline.results, pipeline.totals]) {
    expect((expected[stream] ?? []).length).toBeGreaterThanOrEqual(80);
    expect(actual[stream]?.length, stream).toBe(expected[stream]?.length);
    expect(actual[stream], stream).toEqual(expected[stream]);
  }
  const totals = new Map(
    (actual[pipeline.totals] ?? [])
      .flatMap((bytes) => decodeResult<number>(Buffer.from(bytes, 'hex')).outputs)
      .filter((output) => output.start < MARKERS_FROM)
      .map((output) => [output.start, output.value]),
  );
  expect(totals).toEqual(referenceTotals(READINGS));
}

describe('a partitioned stage 1 and its global stage 2 killed with SIGKILL while readings are written', () => {
  it(
    'should leave every stream of an uninterrupted run after 30 kills or more of both stages',
    async () => {
      expectUninterrupted(
        await killedWhileWriting(
          { instances: 1, grouped: false, rounds: 15 },
          Date.now() % 2 ** 31,
        ),
      );
    },
    bound(300_000),
  );

  it(
    'should keep one copy of each total when two stage-2 instances under one name are killed on their own',
    async () => {
      expectUninterrupted(
        await killedWhileWriting({ instances: 2, grouped: false, rounds: 8 }, Date.now() % 2 ** 31),
      );
    },
    bound(300_000),
  );

  it(
    'should take over from the last total on the standby when the active stage-2 instance of a group is killed',
    async () => {
      expectUninterrupted(
        await killedWhileWriting({ instances: 2, grouped: true, rounds: 8 }, Date.now() % 2 ** 31),
      );
    },
    bound(300_000),
  );
});
