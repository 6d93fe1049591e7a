// npm run partitioned: a two-stage partitioned pipeline with a crash in each stage. Runs on
// the embedded broker; STREAM_WINDOWS_BROKER=rabbitmq npm run partitioned runs it on RabbitMQ.
//
// Stage 1 is a partitioned job over super stream 'readings' (partitioned by sensor): one loop
// per partition counts its readings per minute and publishes one result per minute to ONE
// stream, 'per-partition-minute', under one producer name per partition, so each partition
// resumes from its own last publishing id. Stage 2 reads that stream with `fromResults` and
// totals each minute over the partitions: one global figure per minute, to 'per-minute'.
//
// Why stage 2 is exact. Each partition's results come in minute order, but the partitions'
// results interleave in the stream in whatever order the loops published them: a partition
// that is behind (its readings come late, it restarted, it failed over) publishes minute 5
// after the others published minute 14. A tumbling '1m' window would close minute 5 at the
// first result of minute 6 and miss the lagging partition's. And a window cannot wait for it
// either way: a step is a contiguous run of offsets and its result the whole of that run (a
// step that kept another minute's values aside could not be resumed from its last offset).
// So stage 2's window, `wholeMinutes`, ends a step at the result that completes every minute
// the step holds — a minute being complete once every partition's result for it is in — and
// its result holds those minutes, one output per minute. A minute's figure is then published
// once, whole, whatever the interleaving; the step boundaries are a function of the stream,
// so a replay after a crash ends its steps at the same offsets. The rule it relies on: every
// partition publishes one result per minute (each has readings every minute; a partition
// without readings in a minute would hold stage 2 back, never make it wrong). The example's
// partition 1 is ten minutes behind the others, and stage 1 crashes on it.
//
// Both stages are effectively-once: each step's result is published under a publishing id made
// from the offset of its last source message, so a restart after a crash publishes again
// only what the broker may not have, and the broker discards what it has.
import {
  aggregate,
  decodeResult,
  fromResults,
  jsonMessage,
  partitionIndexFor,
  partitionProducer,
  Placement,
  TriggerResult,
} from '../src/index.js';
import type { PartitionedRunner, Runner, Target, WindowSpec } from '../src/index.js';
import { crashingTarget, DemoCrash } from './crashing-target.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';
import { counted } from '../src/common/plural.js';

const PARTITIONS = 3;
const MINUTES = 30;
const READING_EVERY_S = 20;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);
const STAGE_1 = 'per-partition-minute';
// The demo brokers' first stream is a plain source, which this example does not use.
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

/** Writes minute `minute`'s readings of the sensors of `only` (default all), a chunk each. */
async function writeMinute(minute: number, only?: number): Promise<void> {
  for (const [index, names] of sensors.entries()) {
    if (only !== undefined && index !== only) continue;
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
    const producer = partitionProducer(STAGE_1, stream); // partition.producer in toPartitions
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

/**
 * Stage 2's window (see the header): every result is inside the open step, and the step ends
 * with the result after which every minute in it has all `partitions` results. The step
 * processor builds one assigner and one trigger per run; here they are one object.
 */
function wholeMinutes(partitions: number): WindowSpec {
  let current: WholeMinutes | undefined;
  return {
    kind: 'whole-minutes',
    describe: () => `whole-minutes(${partitions} partitions)`,
    hasEventTimeBounds: false, // a step waits for every minute it holds: nothing is late
    createAssigner: () => (current = new WholeMinutes(partitions)),
    createTrigger: () => current ?? (current = new WholeMinutes(partitions)),
  };
}

class WholeMinutes {
  /** Results per minute (by its start) in the open step, and how many minutes lack some. */
  private readonly results = new Map<number, number>();
  private incomplete = 0;
  start = Number.NaN;
  end = Number.NaN;

  constructor(private readonly partitions: number) {}

  open(minute: number): void {
    this.start = minute;
    this.end = minute + 60_000;
  }
  place(): Placement {
    return Placement.Inside;
  }
  add(minute: number): void {
    const results = (this.results.get(minute) ?? 0) + 1;
    this.results.set(minute, results);
    if (results === 1) this.incomplete++;
    if (results === this.partitions) this.incomplete--;
    this.start = Math.min(this.start, minute);
    this.end = Math.max(this.end, minute + 60_000);
  }
  snapshot(): { start: number; end: number } {
    return { start: this.start, end: this.end };
  }
  onElement(): TriggerResult {
    return this.incomplete === 0 ? TriggerResult.FireAndPurge : TriggerResult.Continue;
  }
  clear(): void {
    this.results.clear();
    this.incomplete = 0;
  }
}

/** Stage 2: every partition's count of a minute, summed: one output per minute. */
async function stageTwo(crashAt?: number): Promise<Runner<unknown, unknown, unknown>> {
  const target = await broker.target('per-minute-job', 'per-minute');
  return aggregate(
    fromResults<number>(broker.source(STAGE_1), { late: 'skip', deadLetters: 'skip' }),
  )
    .window(wholeMinutes(PARTITIONS))
    .key((partitionMinute) => partitionMinute.start)
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
    if (!quiet)
      console.log(`${label}: caught up, ${counted(results, 'result')} published${discarded}`);
  } catch (error) {
    if (!(error instanceof DemoCrash)) throw error;
    console.log(`${label}: crashed after a publish, before its confirm; restarting`);
  }
}

// Minutes 0–15 of partitions 0 and 2, but only 0–5 of partition 1, whose readings come late.
for (let minute = 0; minute <= 15; minute++) {
  for (const index of partitions.keys())
    if (index !== 1 || minute <= 5) await writeMinute(minute, index);
}
// Stage 1's partition 1 dies after its 3rd result reached the broker; restarted, it resumes
// after the step its producer's last publishing id names (the others after theirs).
await runStage('stage 1', () => stageOne(3), false);
await runStage('stage 1 restarted', () => stageOne(), false);
// Stage 2 publishes minutes 0–4: every later one still lacks partition 1's result.
await runStage('stage 2', () => stageTwo(), false);
// Partition 1's late minutes 6–15, then everyone's 16–31: partition 1 publishes its minutes
// 5–14 after the others published theirs.
for (let minute = 6; minute <= 15; minute++) await writeMinute(minute, 1);
for (let minute = 16; minute <= MINUTES + 1; minute++) await writeMinute(minute);
await runStage('stage 1', () => stageOne(), false);
// Stage 2 dies right after its next result reached the broker, before the confirm;
// restarted, it publishes again only what the broker may not have.
await runStage('stage 2', () => stageTwo(1), false);
await runStage('stage 2 restarted', () => stageTwo(), false);

// Stage 2's target: every minute stage 1 closed (0–30) once, whole, in the order published.
const time = (ms = NaN) => new Date(ms).toISOString().slice(11, 16);
const seen = new Set<number>();
console.log(`\nminute        partitions  readings (${sensors.flat().length} sensors)   in result`);
for (const [at, bytes] of (await broker.targetMessages('per-minute')).entries()) {
  const result = decodeResult<{ readings: number; partitions: number }>(bytes);
  for (const { key, value } of result.outputs) {
    const start = Number(key); // stage 2's key: the minute's start
    if (seen.has(start)) throw new Error(`minute ${time(start)} published twice`);
    seen.add(start);
    if (value.readings !== perMinute || value.partitions !== PARTITIONS) {
      throw new Error(`minute ${time(start)} is wrong: ${JSON.stringify(value)}`);
    }
    const figures = `${String(value.partitions).padStart(10)}  ${String(value.readings).padStart(8)}`;
    console.log(`${time(start)}-${time(start + 60_000)}   ${figures}              ${at + 1}`);
  }
}
if (seen.size !== MINUTES + 1) throw new Error(`${seen.size} minutes, not ${MINUTES + 1}`);
console.log(`\n${seen.size} minutes, each exactly once and whole, despite a crash in each stage.`);
await broker.close();
