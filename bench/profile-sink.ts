/**
 * A CPU profile of one side of the sink case, of its timed rounds only:
 *   npx tsx bench/profile-sink.ts sink postgres 1 2000   # writes /tmp/sink.cpuprofile
 *   npx tsx bench/profile-summary.ts /tmp/sink.cpuprofile
 * Arguments: sink | values | unnest | copy (a plain loop), postgres (POSTGRES_URL) | pglite, messages per transaction
 * (default 1), rows (default 2,000), rounds (default 3), output file. The tables are checked
 * equal first, as the bench does.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { benchSource, pgliteDatabase, postgresDatabase, sinkSides, type Side } from './sink.js';

const [
  side = 'sink',
  databaseName = 'postgres',
  sizeArg = '1',
  rowsArg = '2000',
  roundsArg = '3',
  output = '/tmp/sink.cpuprofile',
] = process.argv.slice(2);
const SIDES: readonly string[] = ['sink', 'values', 'unnest', 'copy'];
if (!SIDES.includes(side)) throw new Error(`the side must be one of ${SIDES.join(', ')}`);
const url = process.env.POSTGRES_URL;
if (databaseName === 'postgres' && (url === undefined || url === '')) {
  throw new Error('set POSTGRES_URL');
}
const rows = Number(rowsArg);
const database =
  databaseName === 'postgres' ? postgresDatabase(url as string) : await pgliteDatabase();
const sides = sinkSides(database, await benchSource([rows]), Number(sizeArg), rows);
try {
  await sides.create();
  await sides.checkSameTables();
  const run = sides.runs[side as Side];
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  let timed = 0;
  for (let round = 0; round < Number(roundsArg); round++) timed += (await run()).wallMs;
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(output, JSON.stringify(profile));
  session.disconnect();
  const rate = ((Number(roundsArg) * rows * 1000) / timed).toFixed(0);
  console.log(
    `${side} ${databaseName} ${sizeArg} per transaction: ${rate} rows/s; profile in ${output}`,
  );
} finally {
  await sides.drop();
  await database.close();
}
