// npm run merged-stages: stage 1 per partition, and a global stage 2 over its result streams.
// Runs on the embedded broker; STREAM_WINDOWS_BROKER=rabbitmq npm run merged-stages runs it on
// RabbitMQ.
//
// Stage 1 is one job per partition of super stream 'readings': the sum per sensor and minute,
// each partition to its OWN result stream ('per-sensor-0', ...). Stage 2 reads every result
// stream at once (`mergeInputs([fromResults(...), ...])`) and totals each minute over the
// partitions. The merge orders the results by event time across the streams, so a minute
// closes once every partition's results have passed it, however far apart the partitions
// published them. The example's partition 1 is written half an hour late in wall-clock time
// (here: after the others' stage 1 ran), and stage 2 runs twice, resuming from its own last
// result the second time. Each stage is effectively-once as a single job is.
import { aggregate, decodeResult, fromResults, jsonMessage, mergeInputs } from '../src/index.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';

const PARTITIONS = 3;
const MINUTES = 10;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);
const RESULTS = Array.from({ length: PARTITIONS }, (_, p) => `per-sensor-${p}`);
const TOTALS = 'total-per-minute';
// The demo brokers' first stream is a plain source, which this example does not use.
const STREAMS = ['unused', ...RESULTS, TOTALS];

interface Reading {
  readonly sensor: string;
  readonly at: number;
  readonly value: number;
}

const broker =
  process.env.STREAM_WINDOWS_BROKER === 'rabbitmq'
    ? await rabbitBroker(STREAMS)
    : memoryBroker(STREAMS);
console.log(`on ${broker.name}\n`);
await broker.createSuperStream('readings', PARTITIONS);

/**
 * Partition p's readings: sensor-p reads p + 1 every 10 s for MINUTES minutes; then three
 * readings of 0, ten minutes apart, close every minute of them in both stages.
 */
function readingsOf(p: number): Uint8Array[] {
  const every = Array.from({ length: MINUTES * 6 }, (_, i) => ({
    at: START + i * 10_000,
    value: p + 1,
  }));
  const closing = [MINUTES + 10, MINUTES + 20, MINUTES + 30].map((minute) => ({
    at: START + minute * 60_000,
    value: 0,
  }));
  return [...every, ...closing].map(({ at, value }) =>
    jsonMessage({ sensor: `sensor-${p}`, at, value }),
  );
}

/** Stage 1 of partition p, to its own result stream, until it has read what is there. */
async function stageOne(p: number): Promise<void> {
  await aggregate<Reading>(broker.partitionSource('readings', p))
    .eventTime((reading) => reading.at)
    .key((reading) => reading.sensor)
    .tumbling('1m', { grace: '10s' })
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(await broker.target(`per-sensor-${p}`, RESULTS[p]))
    .run({ untilCaughtUp: true });
}

/** Stage 2 over every result stream, until it has read what is there. */
async function stageTwo(): Promise<void> {
  const inputs = RESULTS.map((stream) =>
    fromResults<number>(broker.source(stream), { late: 'count', deadLetters: 'skip' }),
  );
  await aggregate(mergeInputs(inputs, { idleAfter: 'never' }))
    .tumbling('1m', { grace: '10s' })
    .reduce((total, output) => total + output.value, 0)
    .to(await broker.target(TOTALS, TOTALS))
    .run({ untilCaughtUp: true });
}

// Partitions 0 and 2 first; stage 2 can total no minute yet: partition 1 has published nothing.
for (const p of [0, 2]) {
  await broker.writePartition('readings', p, readingsOf(p));
  await stageOne(p);
}
await stageTwo();
const before = (await broker.targetMessages(TOTALS)).length;
console.log(`stage 2 without partition 1's results: ${before} minutes totalled`);

// Partition 1 comes late; stage 2 resumes from its last result and totals every minute.
await broker.writePartition('readings', 1, readingsOf(1));
await stageOne(1);
await stageTwo();

const totals = (await broker.targetMessages(TOTALS))
  .flatMap((bytes) => decodeResult<number>(bytes).outputs)
  .filter((output) => output.start < START + MINUTES * 60_000);
const expected = 6 * ((PARTITIONS * (PARTITIONS + 1)) / 2);
console.log('\nminute   total');
for (const { start, value } of totals) {
  console.log(`${new Date(start).toISOString().slice(11, 16)}    ${value}`);
}
const exact = totals.length === MINUTES && totals.every((output) => output.value === expected);
console.log(
  exact
    ? `\n${MINUTES} minutes, each ${expected}: every partition's readings, once.`
    : `\nunexpected totals (each minute should be ${expected})`,
);
await broker.close();
if (!exact) process.exitCode = 1;
