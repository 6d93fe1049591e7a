// A job over several inputs (`mergeInputs`) on RabbitMQ, killed with SIGKILL at random moments
// while its inputs are being written: the partitions of a super stream (three inputs, one
// lagging two windows in event time, one five windows ahead after its first third) are written
// a round at a time, each round once the job has been killed again; the job runs as a child
// process, restarted after each kill, and reads every input again from its last result's merge
// record. Its target must then equal, byte for byte, an uninterrupted run of the same job on
// the embedded broker over the whole inputs: no result lost, none twice. Then the same with two
// instances at once under one producer name, each killed and restarted on its own: they publish
// the same results under the same publishing ids, and the broker keeps one copy of each.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { jsonMessage, type DecodedResult } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bundledForFile } from '../support/children/bundled-child.js';
import { runChild, startChild } from '../support/children/killed-child.js';
import { expectStepsTile, stepsOf } from '../support/results/target-stream.js';
import {
  MERGED_INPUTS,
  mergedReadings,
  mergedReadingsJob,
} from '../support/jobs/merged-readings.js';
import { bound } from '../support/timing.js';

/** Readings per input: 150 windows of event time, about 150 results. */
const READINGS = 1_500;
const PRODUCER = 'merged-sigkill-job';
const url = inject('rabbitmqUrl');
const real = rabbitForTests();
const superStreams: string[] = [];
const childPath = bundledForFile(
  new URL('./merged-inputs-child.ts', import.meta.url),
  bound(60_000),
);

afterAll(async () => {
  for (const name of superStreams) await real.rabbit.deleteSuperStream(name);
});

/** The inputs' readings, as messages, by input. */
const inputs = Array.from({ length: MERGED_INPUTS }, (_, input) =>
  mergedReadings(input, READINGS).map((reading) => jsonMessage(reading)),
);

/** The target an uninterrupted run writes on the embedded broker, under the same names. */
async function uninterrupted(partitions: readonly string[], to: string): Promise<Buffer[]> {
  const broker = new MemoryBroker();
  for (const [p, partition] of partitions.entries()) {
    broker.createStream(partition);
    broker.append(partition, inputs[p] as Uint8Array[]);
  }
  broker.createStream(to);
  await mergedReadingsJob(
    partitions.map((partition) => broker.source(partition)),
    broker.target(to, { producer: PRODUCER }),
  ).run({ untilCaughtUp: true });
  return broker.messages(to).map((message) => Buffer.from(message.bytes));
}

/**
 * Writes the inputs in `rounds` rounds, each input's share of a round in a random order of
 * the inputs; round r + 1 starts once `killed()` has reached r + 1.
 */
async function writeInRounds(
  partitions: readonly string[],
  rounds: number,
  killed: () => number,
  random: () => number,
): Promise<void> {
  const feeders = partitions.map((partition) =>
    real.rabbit.target(partition, { producer: 'feeder' }),
  );
  try {
    for (let round = 0; round < rounds; round++) {
      const order = [...partitions.keys()].sort(() => random() - 0.5);
      for (const p of order) {
        const all = inputs[p] as Uint8Array[];
        const share = all.slice((round * all.length) / rounds, ((round + 1) * all.length) / rounds);
        await (feeders[p] as (typeof feeders)[number]).publish(BigInt(round), share);
      }
      while (killed() < round + 1) await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    for (const feeder of feeders) await feeder.close();
  }
}

/** How a run of the child ended. */
type RunEnd = 'killed publishing' | 'killed before publishing' | 'caught up';

/**
 * Runs the child once, killed with SIGKILL after 1 to 4 publishes, or at a random moment up
 * to 2.5 s after its start (while starting, reading its inputs again, or waiting for input),
 * whichever comes first, unless it caught up and exited first.
 */
async function runKilled(args: readonly string[], random: () => number): Promise<RunEnd> {
  const afterPublishes = 1 + Math.floor(random() * 4);
  let published = 0;
  const started = startChild(childPath(), args, (mark) => {
    if (mark === 'p' && ++published >= afterPublishes) started.kill();
  });
  const timer = setTimeout(() => started.kill(), 200 + random() * 2_300);
  try {
    if (!(await started.ended)) return 'caught up';
    return published > 0 ? 'killed publishing' : 'killed before publishing';
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `instances` children at once under one producer name over a new super stream, each killed
 * and restarted until `kills` kills in all, while the inputs are written a round per kill;
 * then each run to completion. Returns the target's results and the uninterrupted run's.
 */
async function killedWhileWriting(
  instances: number,
  kills: number,
  seed: number,
): Promise<{ actual: Buffer[]; expected: Buffer[] }> {
  const superStream = uniqueStream('msig-source');
  superStreams.push(superStream);
  const partitions = await real.rabbit.createSuperStream(superStream, {
    partitions: MERGED_INPUTS,
  });
  const to = await real.newStream('msig-target');
  const args = [url, to, PRODUCER, ...partitions];
  const random = seededRandom(seed);
  const began = Date.now();
  let killed = 0;
  let publishing = 0;
  let written = false;
  const writing = writeInRounds(partitions, kills, () => killed, random).finally(() => {
    written = true;
  });
  const instance = async (): Promise<void> => {
    while (!written) {
      const end = await runKilled(args, random);
      if (end !== 'caught up') killed++;
      if (end === 'killed publishing') publishing++;
    }
  };
  await Promise.all([writing, ...Array.from({ length: instances }, instance)]);
  // Every instance to the end; two at once both catch up and exit.
  const completed = await Promise.all(
    Array.from({ length: instances }, () => runChild(childPath(), args)),
  );
  expect(completed.every((wasKilled) => !wasKilled)).toBe(true);
  expect(killed).toBeGreaterThanOrEqual(kills);
  // Most kills land once it has handed results to the broker, not all at its start.
  expect(publishing).toBeGreaterThanOrEqual(kills / 3);
  console.log(
    `merged SIGKILL test (seed ${seed}): ${instances} instance(s), ${killed} SIGKILLs (${publishing} after a publish) while ` +
      `${MERGED_INPUTS} inputs of ${READINGS} readings were written in ${kills} rounds, ` +
      `${Date.now() - began} ms`,
  );
  const actual = (await readAll(real.rabbit, to)).map((bytes) => Buffer.from(bytes));
  return { actual, expected: await uninterrupted(partitions, to) };
}

/**
 * No result lost, none twice: the uninterrupted run's bytes (compared in hex, quick to
 * compare), its steps tiling the merged positions from 0.
 */
function expectSameTarget(actual: readonly Buffer[], expected: readonly Buffer[]): void {
  expect(expected.length).toBeGreaterThanOrEqual(100);
  expect(actual.length).toBe(expected.length);
  const hex = (results: readonly Buffer[]): string[] => results.map((b) => b.toString('hex'));
  expect(hex(actual)).toEqual(hex(expected));
  expectStepsTile(stepsOf(actual).map((parts) => parts[0] as DecodedResult));
}

describe('a job over several inputs killed with SIGKILL while its inputs are written', () => {
  it(
    'should leave the target of an uninterrupted run after 30 kills, with no duplicate and no loss',
    async () => {
      const { actual, expected } = await killedWhileWriting(1, 30, Date.now() % 2 ** 31);
      expectSameTarget(actual, expected);
    },
    bound(300_000),
  );

  it(
    'should keep one copy of each result when two instances under one name are killed and restarted',
    async () => {
      const { actual, expected } = await killedWhileWriting(2, 12, Date.now() % 2 ** 31);
      expectSameTarget(actual, expected);
    },
    bound(300_000),
  );
});
