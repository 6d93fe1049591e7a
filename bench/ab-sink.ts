/**
 * Before/after of a change to the database sink, in the same run: the `sink` case's sink with
 * this tree's library and with an older copy's (its `databaseSink`, `windowOutputs` and
 * adapters), beside the case's three plain loops, in rotating interleaved rounds:
 *   git archive <commit> src | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/
 *   npx tsx bench/ab-sink.ts /tmp/before [postgres|pglite|both] [per transaction: 100,1000] [rows] [rounds]
 * PostgreSQL is `POSTGRES_URL`'s. Prints, per database and size, each side's rows/s and CPU
 * per row (this process and the database's backends) as medians with the min–max of the
 * rounds, then after over before and each sink over the best plain loop, by both.
 */
import { interleavedRounds, median, ratioSpread, spreadOf, type Spread } from './measure.js';
import { PLAINS, type Plain } from './plain-upserts.js';
import {
  benchSource,
  pgliteDatabase,
  postgresDatabase,
  sinkSides,
  type BenchDatabase,
  type RoundCost,
  type SinkLibrary,
} from './sink.js';

const [beforeDir, which = 'both', sizesArg = '100,1000', rowsArg = '10000', roundsArg = '5'] =
  process.argv.slice(2);
if (beforeDir === undefined) {
  throw new Error('usage: ab-sink.ts <before dir> [postgres|pglite|both] [sizes] [rows] [rounds]');
}
const load = async <T>(path: string): Promise<T> => (await import(`${beforeDir}/src/${path}`)) as T;
const before: SinkLibrary = {
  ...(await load<Pick<SinkLibrary, 'databaseSink'>>('sink/database-sink.ts')),
  ...(await load<Pick<SinkLibrary, 'windowOutputs'>>('sink/window-outputs.ts')),
  ...(await load<Pick<SinkLibrary, 'postgres'>>('postgres/index.ts')),
  ...(await load<Pick<SinkLibrary, 'pglite'>>('pglite/index.ts')),
};
const rows = Number(rowsArg);
const sizes = sizesArg.split(',').map(Number);
const url = process.env.POSTGRES_URL;
const databases: BenchDatabase[] = [];
if (which !== 'pglite') {
  if (url === undefined || url === '') throw new Error('set POSTGRES_URL');
  databases.push(postgresDatabase(url));
}
if (which !== 'postgres') databases.push(await pgliteDatabase());
const source = await benchSource([rows]);

type Side = 'before' | 'after' | Plain;
const SIDES: readonly Side[] = ['before', 'after', ...PLAINS];
const format = (spread: Spread, digits: number): string =>
  `${spread.median.toFixed(digits)} (${spread.min.toFixed(digits)}–${spread.max.toFixed(digits)})`;

try {
  for (const database of databases) {
    for (const size of sizes) {
      const after = sinkSides(database, source, size, rows);
      const old = sinkSides(database, source, size, rows, before);
      try {
        await after.create();
        await old.create();
        await after.checkSameTables();
        await old.runs.sink(); // a warm-up of the older sink too
        const tasks: Record<Side, () => Promise<RoundCost>> = {
          before: old.runs.sink,
          after: after.runs.sink,
          values: after.runs.values,
          unnest: after.runs.unnest,
          copy: after.runs.copy,
        };
        const rounds = await interleavedRounds(tasks, Number(roundsArg), 0);
        const wall = (side: Side): number[] => rounds[side].map((round) => round.wallMs);
        const cpu = (side: Side): number[] => rounds[side].map((round) => round.cpuMs);
        console.log(
          `\n${database.name}, ${size} per transaction, ${rows} rows, ${roundsArg} rounds`,
        );
        for (const side of SIDES) {
          const perSecond = wall(side).map((ms) => (rows * 1000) / ms);
          const usPerRow = cpu(side).map((ms) => (ms * 1000) / rows);
          console.log(
            `  ${side.padEnd(7)} rows/s ${format(spreadOf(perSecond), 0).padEnd(24)} ` +
              `CPU us/row ${format(spreadOf(usPerRow), 1)}`,
          );
        }
        const best = (of: (side: Side) => number[]): Plain =>
          PLAINS.reduce((a, b) => (median(of(b)) < median(of(a)) ? b : a));
        const ratios: Record<string, [Spread, Spread]> = {
          'after / before': [
            ratioSpread(wall('after'), wall('before')),
            ratioSpread(cpu('after'), cpu('before')),
          ],
          [`before / best (${best(wall)}, ${best(cpu)})`]: [
            ratioSpread(wall('before'), wall(best(wall))),
            ratioSpread(cpu('before'), cpu(best(cpu))),
          ],
          [`after / best (${best(wall)}, ${best(cpu)})`]: [
            ratioSpread(wall('after'), wall(best(wall))),
            ratioSpread(cpu('after'), cpu(best(cpu))),
          ],
        };
        for (const [name, [byWall, byCpu]] of Object.entries(ratios)) {
          console.log(`  ${name}: rows/s ${format(byWall, 2)}, CPU ${format(byCpu, 2)}`);
        }
      } finally {
        await after.drop();
        await old.drop();
      }
    }
  }
} finally {
  for (const database of databases) await database.close();
}
