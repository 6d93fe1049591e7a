/**
 * A CPU profile of the end-to-end job against the real broker, of its timed rounds only:
 *   npx tsx bench/profile-e2e.ts job 1000000 3        # writes /tmp/e2e.cpuprofile
 *   npx tsx bench/profile-summary.ts /tmp/e2e.cpuprofile
 * Arguments: job | discarded (results encoded, not published) | consume (the source alone) |
 * hot (the StepProcessor over the stream's chunks), messages (default 1,000,000), rounds
 * (default 3), output file. The corpus is published once into `bench-e2e-profile-<messages>`
 * and reused by later runs; delete that stream to start over.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { connect } from '../src/rabbitmq/index.js';
import {
  discardingTarget,
  e2eProcessorConfig,
  ownConsume,
  profileSource,
  readChunks,
  runHotPath,
  runJob,
} from './e2e.js';

const [mode = 'job', messagesArg = '1000000', roundsArg = '3', output = '/tmp/e2e.cpuprofile'] =
  process.argv.slice(2);
const messages = Number(messagesArg);
const url = process.env.RABBITMQ_STREAM_URL;
if (url === undefined || url === '') throw new Error('set RABBITMQ_STREAM_URL');
const adapter = await connect(url);
const stream = await profileSource(adapter, url, messages);
const sizing = adapter.target(stream, { producer: 'bench' });
const chunks = mode === 'hot' ? await readChunks(adapter.source(stream), messages) : [];
let round = 0;
const tasks: Record<string, () => Promise<unknown>> = {
  job: async () => {
    const results = `bench-e2e-profile-results-${process.pid}-${round++}`;
    await adapter.createStream(results);
    try {
      await runJob(adapter.source(stream), adapter.target(results, { producer: 'bench' }));
    } finally {
      await adapter.deleteStream(results);
    }
  },
  discarded: () => runJob(adapter.source(stream), discardingTarget(sizing)),
  consume: () => ownConsume(adapter.source(stream), messages),
  hot: () =>
    Promise.resolve(runHotPath(e2eProcessorConfig(messages), chunks, sizing.maxWriteBytes)),
};
const task = tasks[mode];
if (task === undefined) throw new Error(`mode must be one of ${Object.keys(tasks).join(', ')}`);
await task(); // warm-up, unprofiled
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const rounds = Number(roundsArg);
const started = performance.now();
for (let i = 0; i < rounds; i++) await task();
const elapsed = performance.now() - started;
const { profile } = await session.post('Profiler.stop');
writeFileSync(output, JSON.stringify(profile));
session.disconnect();
await adapter.close();
const rate = ((rounds * messages) / elapsed).toFixed(0);
console.log(`${mode}: ${rate}k msg/s over ${rounds} rounds; profile in ${output}`);
