// npm start: per-minute, per-sensor temperature rollups, with two crashes and restarts.
// Runs on the embedded broker; STREAM_WINDOWS_BROKER=rabbitmq npm start runs it on RabbitMQ.
import { aggregate, decodeResult, jsonMessage } from '../src/index.js';
import { crashingTarget, DemoCrash } from './crashing-target.js';
import { memoryBroker, rabbitBroker } from './demo-brokers.js';
import { counted } from '../src/common/plural.js';

interface Reading {
  sensor: string;
  celsius: number;
}

const broker =
  process.env.STREAM_WINDOWS_BROKER === 'rabbitmq' ? await rabbitBroker() : memoryBroker();
console.log(`on ${broker.name}\n`);

// 1. A synthetic source: 4 sensors, a reading every 5 s each, for 6 minutes. The creation
//    time of each message is its event time, so windows do not depend on when we run.
const start = Date.UTC(2026, 0, 1, 12, 0, 0);
for (let second = 0; second < 360; second += 5) {
  await broker.write(
    ['s1', 's2', 's3', 's4'].map((sensor, i) =>
      jsonMessage(
        { sensor, celsius: 20 + i + Math.round(10 * Math.sin(second / 60 + i)) / 10 },
        { creationTime: start + second * 1000 },
      ),
    ),
  );
}

// 2. The job: per-minute tumbling windows, one output per sensor, ONE message per window,
//    published under the offset of the window's last reading.
const job = async (crash?: [number, 'after-publish' | 'before-publish']) => {
  const target = await broker.target('rollups-1m');
  return aggregate<Reading>(broker.source())
    .tumbling('1m')
    .key((reading) => reading.sensor)
    .aggregate({
      init: () => ({ n: 0, sum: 0, max: -Infinity }),
      add: (acc, r) => ({
        n: acc.n + 1,
        sum: acc.sum + r.celsius,
        max: Math.max(acc.max, r.celsius),
      }),
      result: (acc) => ({ mean: Math.round((acc.sum / acc.n) * 10) / 10, max: acc.max }),
    })
    .to(crash === undefined ? target : crashingTarget(target, ...crash));
};

// 3. Run 1 dies after its 3rd result reached the broker but before the confirm; run 2 dies
//    before its 2nd publish; run 3 finishes. Each restart resumes after the step the broker's
//    last publishing id names: no offset store, no duplicate, no loss.
const crashes: [number, 'after-publish' | 'before-publish'][] = [
  [3, 'after-publish'],
  [2, 'before-publish'],
];
for (const [attempt, crash] of [...crashes, undefined].entries()) {
  try {
    const { results } = await (await job(crash)).run({ untilCaughtUp: true });
    console.log(`run ${attempt + 1}: caught up, ${counted(results, 'result')} published`);
  } catch (error) {
    if (!(error instanceof DemoCrash)) throw error;
    console.log(`run ${attempt + 1}: ${error.message}; restarting`);
  }
}

// 4. The target stream: every closed window exactly once. The last minute is still open
//    (no later reading has closed it), so it is not published yet.
const time = (ms = NaN) => new Date(ms).toISOString().slice(11, 16);
const seen = new Set<number | undefined>();
console.log('\nwindow        source offsets  per sensor: mean (max) °C');
for (const bytes of await broker.targetMessages()) {
  const result = decodeResult<{ mean: number; max: number }>(bytes);
  if (seen.has(result.windowStart))
    throw new Error(`window ${time(result.windowStart)} published twice`);
  seen.add(result.windowStart);
  const sensors = result.outputs.map((o) => `${o.key} ${o.value.mean} (${o.value.max})`).join('  ');
  const offsets = `${result.firstOffset}..${result.lastOffset}`.padEnd(15);
  console.log(`${time(result.windowStart)}-${time(result.windowEnd)}   ${offsets} ${sensors}`);
}
console.log(`\n${seen.size} windows, each exactly once, despite 2 crashes.`);
await broker.close();
