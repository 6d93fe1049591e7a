// npm run partitioned: a two-stage partitioned pipeline with a crash in each stage. Runs on
// the embedded broker; STREAM_WINDOWS_BROKER=rabbitmq npm run partitioned runs it on RabbitMQ.
//
// Stage 1 is a partitioned job over super stream 'readings' (partitioned by sensor): one loop
// per partition counts its readings per minute and publishes one result per minute to ONE
// stream, 'per-partition-minute', under one producer name per partition, so each partition
// resumes from its own last publishing id. Stage 2 reads that stream with `fromResults` and
// totals each minute over the partitions: one global figure per minute, to 'per-minute'.
//
// Why stage 2 is exact, and when it would not be. Each partition's results are in minute
// order, but the partitions' results interleave in the stream, and stage 2's tumbling window
// of minute M closes at the first result of a later minute. So stage 2 is exact when the
// stream holds every partition's result of minute M before the first result of a later one.
// A window cannot wait for a partition that is behind (a step is a contiguous run of offsets,
// and its result the whole of that run: a step that held on to another minute's values could
// not be resumed from its last offset). Here stage 1 runs caught up minute by minute (a
// batch-style driver, as `untilCaughtUp` jobs run from a scheduler): after minute m's readings
// are written, every partition publishes minute m - 1 and nothing later, crash or not, so the
// order holds by construction. A live stage 1 keeps it while no partition falls a whole minute
// behind the others (a restart, a failover, a backlog); when one does, its late minute goes to
// the `late` section of stage 2's open result (late: 'side'): never lost, never counted twice,
// but not in that minute's figure. This example checks that no result has a late section.
//
// Both stages are effectively-once: each step's one result is published with the offset of
// its last source message as the publishing id, so a restart after a crash publishes again
// only what the broker may not have, and the broker discards what it has.
import {
  aggregate,
  decodeResult,
  fromResults,
  jsonMessage,
  partitionIndexFor,
} from '../src/index.js';
import type { PartitionedRunner, Runner, Target } from '../src/index.js';
import { crashingTarget, DemoCrash } from './crashing-target.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';

const PARTITIONS = 3;
const MINUTES = 30;
const READING_EVERY_S = 20;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);
const STAGE_1 = 'per-partition-minute';
const STREAMS = ['unused', STAGE_1, 'per-minute'];

const broker =
  process.env.STREAM_WINDOWS_BROKER === 'rabbitmq'
    ? await rabbitBroker(STREAMS)
    : memoryBroker(STREAMS);
console.log(`on ${broker.name}\n`);
const partitions = await broker.createSuperStream('readings', PARTITIONS);

// Two sensors per partition, routed as the RabbitMQ clients route a key.
const sensors: string[][] = partitions.map(() => []);
for (let n = 1; sensors.some((names) => names.length < 2); n++) {
  const names = sensors[partitionIndexFor(`sensor-${n}`, PARTITIONS)];
  if (names !== undefined && names.length < 2) names.push(`sensor-${n}`);
}
const perMinute = sensors.flat().length * (60 / READING_EVERY_S);

/** Writes minute `minute`'s readings, each partition its sensors', one chunk per partition. */
async function writeMinute(minute: number): Promise<void> {
  for (const [index, names] of sensors.entries()) {
    const seconds = Array.from({ length: 60 / READING_EVERY_S }, (_, i) => i * READING_EVERY_S);
    const readings = seconds.flatMap((second) =>
      names.map((sensor) =>
        jsonMessage({ sensor }, { creationTime: START + (minute * 60 + second) * 1000 }),
      ),
    );
    await broker.writePartition('readings', index, readings);
  }
}

/** Stage 1, one loop per partition: its readings per minute; partition 1 may crash. */
async function stageOne(crashAt?: number): Promise<PartitionedRunner<unknown, number, number>> {
  // A crashed run's publishers go before new ones of the same names (see demo-brokers).
  const targets = new Map<string, Target>();
  for (const stream of partitions) {
    const producer = `${STAGE_1}-${stream}`;
    const target = await broker.target(producer, STAGE_1);
    const crashing = crashAt !== undefined && stream === partitions[1];
    targets.set(producer, crashing ? crashingTarget(target, crashAt, 'after-publish') : target);
  }
  return aggregate(broker.superStreamSource('readings'))
    .tumbling('1m')
    .reduce((count: number) => count + 1, 0)
    .toPartitions(
      (partition) => {
        const target = targets.get(partition.producer);
        if (target === undefined) throw new Error(`no target for ${partition.producer}`);
        return target;
      },
      { name: STAGE_1 },
    );
}

/** Stage 2: every partition's count of a minute, summed; one result per minute. */
async function stageTwo(crashAt?: number): Promise<Runner<unknown, unknown, unknown>> {
  const target = await broker.target('per-minute-job', 'per-minute');
  return aggregate(
    fromResults<number>(broker.source(STAGE_1), { late: 'skip', deadLetters: 'skip' }),
  )
    .tumbling('1m')
    .late('side')
    .aggregate({
      init: () => ({ readings: 0, partitions: 0 }),
      add: (total, partitionMinute) => ({
        readings: total.readings + partitionMinute.value,
        partitions: total.partitions + 1,
      }),
      result: (total) => total,
    })
    .to(
      crashAt === undefined ? target : crashingTarget(target, crashAt, 'after-publish'),
    ) as Runner<unknown, unknown, unknown>;
}

type Job = {
  run(options: { untilCaughtUp: true }): Promise<{ results: number; duplicates: number }>;
};

/**
 * Runs `job` until caught up, and again after a planned crash (a restart: it resumes from
 * its producers' last publishing ids). Says what each run did, quietly when nothing happened.
 */
async function runStage(label: string, job: () => Promise<Job>, quiet: boolean): Promise<void> {
  try {
    const { results, duplicates } = await (await job()).run({ untilCaughtUp: true });
    const discarded = duplicates > 0 ? `, ${duplicates} published again and discarded` : '';
    if (!quiet) console.log(`${label}: caught up, ${results} results published${discarded}`);
  } catch (error) {
    if (!(error instanceof DemoCrash)) throw error;
    console.log(`${label}: crashed after a publish, before its confirm; restarting`);
  }
}

// Minute by minute, stage 1 catches up; stage 2 every ten minutes. Stage 1's partition 1
// dies at minute 12, right after its result reached the broker; stage 2 dies after its 3rd
// result of the run at minute 20. Each restart resumes from its producer's last id + 1, and
// publishes again only what the broker may not have (it discards a duplicate).
for (let minute = 0; minute <= MINUTES + 1; minute++) {
  await writeMinute(minute);
  if (minute === 12) {
    await runStage(`minute ${minute}, stage 1`, () => stageOne(1), false);
    await runStage(`minute ${minute}, stage 1 restarted`, () => stageOne(), false);
  } else await runStage(`minute ${minute}, stage 1`, () => stageOne(), true);
  if (minute === 20) {
    await runStage(`minute ${minute}, stage 2`, () => stageTwo(3), false);
    await runStage(`minute ${minute}, stage 2 restarted`, () => stageTwo(), false);
  } else if ((minute > 0 && minute % 10 === 0) || minute === MINUTES + 1) {
    await runStage(`minute ${minute}, stage 2`, () => stageTwo(), false);
  }
}

// Stage 2's target: every closed minute once, with every partition's readings and none late.
const time = (ms = NaN) => new Date(ms).toISOString().slice(11, 16);
const seen = new Set<number | undefined>();
console.log(`\nminute        partitions  readings (${sensors.flat().length} sensors)`);
for (const bytes of await broker.targetMessages('per-minute')) {
  const result = decodeResult<{ readings: number; partitions: number }>(bytes);
  if (seen.has(result.windowStart)) throw new Error(`minute ${time(result.windowStart)} twice`);
  seen.add(result.windowStart);
  const [total] = result.outputs;
  if (
    result.lateCount > 0 ||
    total?.value.readings !== perMinute ||
    total.value.partitions !== PARTITIONS
  ) {
    throw new Error(
      `minute ${time(result.windowStart)} is wrong: ${JSON.stringify(total?.value)}, ${result.lateCount} late`,
    );
  }
  console.log(
    `${time(result.windowStart)}-${time(result.windowEnd)}   ${String(total.value.partitions).padStart(10)}  ${total.value.readings}`,
  );
}
if (seen.size !== MINUTES) throw new Error(`${seen.size} minutes, not ${MINUTES}`);
console.log(`\n${seen.size} minutes, each exactly once and right, despite a crash in each stage.`);
await broker.close();
