// npm run pipeline: two chained jobs, per-sensor per-minute counts, then per-hour totals
// across sensors, with a crash in each stage. Runs on the embedded broker;
// STREAM_WINDOWS_BROKER=rabbitmq npm run pipeline runs it on RabbitMQ.
import { decodeResult } from '../src/index.js';
import { crashingTarget, DemoCrash } from './crashing-target.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';
import { minutesOfReadings, SENSORS, stageOne, stageTwo } from './pipeline-stages.js';
import { counted } from '../src/common/plural.js';

const STREAMS = ['sensors', 'per-minute', 'per-hour'];
const broker =
  process.env.STREAM_WINDOWS_BROKER === 'rabbitmq'
    ? await rabbitBroker(STREAMS)
    : memoryBroker(STREAMS);
console.log(`on ${broker.name}\n`);

// 1. Three sensors, a reading every 20 s each, for three hours (and two minutes more).
for (const minute of minutesOfReadings()) await broker.write(minute);

type Crash = [number, 'after-publish' | 'before-publish'] | undefined;
const stage = {
  1: async (crash: Crash) => {
    const target = await broker.target('per-minute-job', 'per-minute');
    return stageOne(
      broker.source(),
      crash === undefined ? target : crashingTarget(target, ...crash),
    );
  },
  2: async (crash: Crash) => {
    const target = await broker.target('per-hour-job', 'per-hour');
    return stageTwo(
      broker.source('per-minute'),
      crash === undefined ? target : crashingTarget(target, ...crash),
    );
  },
};

// 2. Stage 1 dies after its 70th minute reached the broker; stage 2 then runs on what is
//    there, and dies after its first hour reached the broker but before the confirm; stage 1
//    finishes, then stage 2. Each restart resumes after the step its target's last publishing
//    id names.
const runs: [1 | 2, Crash][] = [
  [1, [70, 'after-publish']],
  [2, [1, 'after-publish']],
  [1, undefined],
  [2, undefined],
];
for (const [attempt, [which, crash]] of runs.entries()) {
  try {
    const { results } = await (await stage[which](crash)).run({ untilCaughtUp: true });
    console.log(
      `run ${attempt + 1}, stage ${which}: caught up, ${counted(results, 'result')} published`,
    );
  } catch (error) {
    if (!(error instanceof DemoCrash) || crash === undefined) throw error;
    // The crash as planned: which pipelined publish reports it first differs between brokers.
    console.log(`run ${attempt + 1}, stage ${which}: crashed ${crash[1]} ${crash[0]}; restarting`);
  }
}

// 3. Stage 2's target: every closed hour once, 180 readings per sensor: 540 in all.
const time = (ms = NaN) => new Date(ms).toISOString().slice(11, 16);
const seen = new Set<number | undefined>();
console.log(`\nhour          minutes  readings (${SENSORS.length} sensors)`);
for (const bytes of await broker.targetMessages('per-hour')) {
  const result = decodeResult<{ readings: number; minutes: number }>(bytes);
  if (seen.has(result.windowStart))
    throw new Error(`hour ${time(result.windowStart)} published twice`);
  seen.add(result.windowStart);
  const [total] = result.outputs;
  console.log(
    `${time(result.windowStart)}-${time(result.windowEnd)}   ${String(total?.value.minutes).padStart(7)}  ${total?.value.readings}`,
  );
}
console.log(`\n${seen.size} hours, each exactly once, despite a crash in each stage.`);
await broker.close();
