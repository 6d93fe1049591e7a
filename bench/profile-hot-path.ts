/**
 * A CPU profile of one hot-path implementation, of its rounds only (not the corpus build):
 *   npx tsx bench/profile-hot-path.ts engine tumbling-1m 100   # writes /tmp/hot-path.cpuprofile
 *   npx tsx bench/profile-summary.ts /tmp/hot-path.cpuprofile
 * Arguments: engine|floor|rxjs, a window kind, keys, messages (default 300,000), output file.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { buildChunks, corpusShape } from './corpus.js';
import { engineConfig, runEngine } from './hot-path/engine.js';
import { runFloor } from './hot-path/floor.js';
import { runRxjs } from './hot-path/rxjs.js';
import { WINDOW_KINDS, type WindowKind } from './hot-path/window-kinds.js';

const [
  implementation = 'engine',
  kindArg = 'tumbling-1m',
  keys = '100',
  messages = '300000',
  output = '/tmp/hot-path.cpuprofile',
] = process.argv.slice(2);
const kind = WINDOW_KINDS.find((candidate) => candidate === kindArg);
if (kind === undefined) throw new Error(`window kind must be one of ${WINDOW_KINDS.join(', ')}`);
const shape = corpusShape(Number(messages), Number(keys));
const chunks = buildChunks(shape);
const run: Record<string, (kind: WindowKind) => unknown> = {
  engine: (windowKind) => runEngine(engineConfig(windowKind, shape), chunks),
  floor: (windowKind) => runFloor(windowKind, shape, chunks),
  rxjs: (windowKind) => runRxjs(windowKind, shape, chunks),
};
const task = run[implementation];
if (task === undefined) throw new Error('implementation must be engine, floor or rxjs');
task(kind); // warm-up, unprofiled
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.start');
const started = performance.now();
for (let round = 0; round < 5; round++) task(kind);
const elapsed = performance.now() - started;
const { profile } = await session.post('Profiler.stop');
writeFileSync(output, JSON.stringify(profile));
session.disconnect();
const rate = ((5 * shape.messages) / elapsed).toFixed(0);
console.log(`${implementation} ${kind} ${keys} keys: ${rate}k msg/s; profile in ${output}`);
