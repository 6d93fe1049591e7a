import { isDeepStrictEqual } from 'node:util';
import { buildChunks, corpusShape } from '../corpus.js';
import { interleavedTimes, ratioSpread } from '../measure.js';
import { ratioRange, throughput, type CaseResult } from '../report.js';
import { engineConfig, runEngine } from './engine.js';
import { runFloor } from './floor.js';
import { runRxjs } from './rxjs.js';
import { WINDOW_KINDS } from './window-kinds.js';

export const HOT_PATH_KEYS = [1, 100, 10_000] as const;

/**
 * Case 1: `messages` pre-encoded source messages through StepProcessor for every window
 * kind and key count, against the floor and RxJS on the same chunks in the same rounds.
 * Before timing, all three must report the same windows: a baseline that computes less
 * would flatter the ratios.
 */
export function hotPathCases(
  messages: number,
  repeats: number,
  keyCounts: readonly number[] = HOT_PATH_KEYS,
): CaseResult[] {
  const results: CaseResult[] = [];
  for (const keys of keyCounts) {
    const shape = corpusShape(messages, keys);
    const chunks = buildChunks(shape);
    for (const kind of WINDOW_KINDS) {
      const config = engineConfig(kind, shape);
      const name = `${kind}/${keys}-keys`;
      const engine = runEngine(config, chunks);
      for (const [baseline, digests] of [
        ['floor', runFloor(kind, shape, chunks)],
        ['rxjs', runRxjs(kind, shape, chunks)],
      ] as const) {
        if (!isDeepStrictEqual(engine, digests)) {
          throw new Error(`hot path ${name}: ${baseline} computed other windows than the engine`);
        }
      }
      const rounds = interleavedTimes(
        {
          engine: () => runEngine(config, chunks),
          floor: () => runFloor(kind, shape, chunks),
          rxjs: () => runRxjs(kind, shape, chunks),
        },
        repeats,
      );
      const floor = ratioSpread(rounds.engine, rounds.floor);
      const rxjs = ratioSpread(rounds.engine, rounds.rxjs);
      results.push({
        name,
        kind: 'hot-path',
        ...throughput(messages, rounds.engine),
        ratios: { floor: floor.median, rxjs: rxjs.median },
        values: { ...ratioRange('floor', floor), ...ratioRange('rxjs', rxjs) },
      });
    }
  }
  return results;
}
