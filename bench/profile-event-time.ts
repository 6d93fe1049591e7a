/**
 * A CPU profile of one event-time job (bench/event-time/jobs.ts) through the whole job on the
 * embedded broker, of its timed runs only (not the source's build):
 *   npx tsx bench/profile-event-time.ts hopping 100000   # writes /tmp/event-time.cpuprofile
 *   npx tsx bench/profile-summary.ts /tmp/event-time.cpuprofile
 * Arguments: step-tumbling|tumbling|hopping|session, open keys, messages (default 400,000),
 * runs (default 3), output file.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { MemoryBroker } from '../src/memory/broker.js';
import { cpuClock } from './measure.js';
import { fillSource } from './event-time/corpus.js';
import { EVENT_TIME_KINDS, jobOf, type JobKind } from './event-time/jobs.js';
import { LARGE_FRAME_MAX, throughputShape } from './event-time/throughput.js';

const [
  kindArg = 'hopping',
  keys = '100000',
  messages = '400000',
  runs = '3',
  output = '/tmp/event-time.cpuprofile',
] = process.argv.slice(2);
const kinds: readonly JobKind[] = ['step-tumbling', ...EVENT_TIME_KINDS];
const kind = kinds.find((candidate) => candidate === kindArg);
if (kind === undefined) throw new Error(`kind must be one of ${kinds.join(', ')}`);
const shape = throughputShape(Number(messages), Number(keys));
const broker = new MemoryBroker({ frameMax: LARGE_FRAME_MAX });
fillSource(broker, shape);
let targets = 0;
/** One run to caught up on a results stream of its own; its CPU milliseconds. */
async function run(): Promise<number> {
  const target = `results-${targets++}`;
  broker.createStream(target);
  const job = jobOf(
    kind as JobKind,
    broker.source('source'),
    broker.target(target, { producer: 'bench' }),
  );
  const cpu = cpuClock();
  await job.run({ untilCaughtUp: true });
  const cpuMs = cpuClock() - cpu;
  broker.deleteStream(target);
  return cpuMs;
}
await run(); // warm-up, unprofiled
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const cpuMs: number[] = [];
for (let round = 0; round < Number(runs); round++) cpuMs.push(await run());
const { profile } = await session.post('Profiler.stop');
writeFileSync(output, JSON.stringify(profile));
session.disconnect();
const perRun = cpuMs.map((ms) => ms.toFixed(0)).join(', ');
console.log(
  `${kind} ${keys} keys, ${shape.messages} messages: CPU ms per run ${perRun}; profile in ${output}`,
);
