// npm start: per-minute, per-sensor temperature rollups with a crash in the middle.
// Runs on the embedded broker; nothing to install or start.
import { aggregate, decodeResult, jsonMessage } from '../src/index.js';
import { MemoryBroker, SimulatedCrash } from '../src/memory/index.js';

interface Reading {
  sensor: string;
  celsius: number;
}

// 1. A synthetic source: 4 sensors, a reading every 5 s each, for 6 minutes. The creation
//    time of each message is its event time, so windows do not depend on when we run.
const broker = new MemoryBroker();
broker.createStream('sensors');
broker.createStream('rollups');
const start = Date.UTC(2026, 0, 1, 12, 0, 0);
for (let second = 0; second < 360; second += 5) {
  const chunk = ['s1', 's2', 's3', 's4'].map((sensor, i) =>
    jsonMessage(
      { sensor, celsius: 20 + i + Math.round(10 * Math.sin(second / 60 + i)) / 10 },
      { creationTime: start + second * 1000 },
    ),
  );
  broker.append('sensors', chunk);
}

// 2. The job: per-minute tumbling windows, one output per sensor, one message per window.
const job = () =>
  aggregate<Reading>(broker.source('sensors'))
    .tumbling('1m')
    .key((reading) => reading.sensor)
    .aggregate({
      init: () => ({ n: 0, sum: 0, max: -Infinity }),
      add: (acc, r) => ({
        n: acc.n + 1,
        sum: acc.sum + r.celsius,
        max: Math.max(acc.max, r.celsius),
      }),
      result: (acc) => ({ n: acc.n, mean: Math.round((acc.sum / acc.n) * 10) / 10, max: acc.max }),
    })
    .to(broker.target('rollups', { producer: 'rollups-1m' }));

// 3. A crash after the 3rd result is written but before its confirm arrives, and another
//    one before the 2nd publish of the restarted job. Each restart resumes from the
//    broker's last publishing id.
broker.injectFault({ stream: 'rollups', atPublish: 3, point: 'after-publish' });
broker.injectFault({ stream: 'rollups', atPublish: 5, point: 'before-publish' });
for (let attempt = 1; ; attempt++) {
  try {
    const { results } = await job().run({ untilCaughtUp: true });
    console.log(`run ${attempt}: caught up after publishing ${results} results`);
    break;
  } catch (error) {
    if (!(error instanceof SimulatedCrash)) throw error;
    console.log(`run ${attempt}: crashed (${error.point}); restarting`);
  }
}

// 4. The target stream: every window exactly once. The last minute is still open (no later
//    reading has closed it), so it is not published yet.
const time = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const seen = new Set<number>();
console.log('\nwindow        offsets   per sensor: mean (max) °C');
for (const { offset, bytes } of broker.messages('rollups')) {
  const result = decodeResult<{ mean: number; max: number }>(bytes);
  const windowStart = result.windowStart ?? NaN;
  if (seen.has(windowStart)) throw new Error(`window ${time(windowStart)} published twice`);
  seen.add(windowStart);
  const sensors = result.outputs.map((o) => `${o.key} ${o.value.mean} (${o.value.max})`);
  const offsets = `${result.firstOffset}..${result.lastOffset}`.padEnd(9);
  console.log(
    `${time(windowStart)}-${time(result.windowEnd ?? NaN)}   ${offsets} ${sensors.join('  ')}   [target offset ${offset}]`,
  );
}
console.log(`\n${seen.size} windows, each exactly once, despite 2 crashes.`);
