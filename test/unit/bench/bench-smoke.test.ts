import { describe, expect, it } from 'vitest';
import { codecCases } from '../../../bench/codec.js';
import { eventTimeCases } from '../../../bench/event-time.js';
import { buildChunks, checkEncoding, corpusShape } from '../../../bench/corpus.js';
import { frameAssemblyCases } from '../../../bench/frame-assembly.js';
import { hotPathCases } from '../../../bench/hot-path/case.js';
import { memoryCases } from '../../../bench/memory.js';
import { mergeCases } from '../../../bench/merge.js';
import { observeCases } from '../../../bench/observe.js';
import { recoveryCases } from '../../../bench/recovery.js';
import { formatTable, throughput, verdicts, type CaseResult } from '../../../bench/report.js';
import { embeddedScalingCases } from '../../../bench/scaling.js';
import { sinkCases } from '../../../bench/sink.js';
import { expectRatioRanges } from '../../support/bench/ratio-ranges.js';

/** A throughput printed with the spread of its rounds: min <= median <= max, all given. */
function expectSpread(result: CaseResult | undefined): void {
  expect(result?.msgsPerSecMin).toBeLessThanOrEqual(result?.msgsPerSec ?? Number.NaN);
  expect(result?.msgsPerSec).toBeLessThanOrEqual(result?.msgsPerSecMax ?? Number.NaN);
  expect(formatTable(result === undefined ? [] : [result])).toMatch(/\d \([\d,]+–[\d,]+\)/);
}

// Each bench case at a tiny size, so that the benches keep building and running. Nothing here
// asserts a timing: figures at these sizes mean nothing.
describe('bench smoke', () => {
  it('builds the corpus as a producer using jsonMessage would write it', () => {
    expect(() =>
      checkEncoding({ sensor: 'sensor-7', value: 12.5 }, Date.UTC(2025, 0, 1)),
    ).not.toThrow();
    const chunks = buildChunks(corpusShape(1_200, 10));
    expect(chunks.map((chunk) => chunk.count)).toEqual([500, 500, 200]);
    expect(chunks[2]?.firstOffset).toBe(1_000n);
  });

  it('runs every hot-path case, whose baselines compute the same windows as the engine', () => {
    const results = hotPathCases(400, 1, [1, 100]);
    expect(results.map((result) => result.name)).toContain('session/100-keys');
    for (const result of results) {
      expect(result.msgsPerSec).toBeGreaterThan(0);
      expect(Object.keys(result.ratios)).toEqual(['floor', 'rxjs']);
      expectSpread(result);
    }
    expectRatioRanges(results);
    // The floor at 100 keys for each of the 4 kinds (RxJS is held at 10,000 keys, not run here).
    expect(verdicts(results)).toHaveLength(4);
    expect(formatTable(results)).toContain('tumbling-1m/1-keys');
  });

  it('runs the codec cases, checking the stock decoder reads the same bodies', async () => {
    const results = await codecCases(5);
    expectRatioRanges(results);
    expect(
      results.find((result) => result.name === 'source-decode/scanMessage')?.ratios,
    ).toHaveProperty('stockClient');
  });

  it('runs the frame-assembly case in a child, whose routers hand over the same frames', async () => {
    const [assembler, concat] = await frameAssemblyCases(40, 1);
    expect(assembler?.msgsPerSec).toBeGreaterThan(0);
    expectSpread(assembler);
    expect(Object.keys(assembler?.ratios ?? {})).toEqual(['concat']);
    expectRatioRanges([assembler, concat]);
    // Frames of 20-65 KB in 64 KiB reads: most span reads, so both copy, the router before more.
    expect(assembler?.values?.copiedMB).toBeGreaterThan(0);
    expect(concat?.values?.copiedMB).toBeGreaterThan(assembler?.values?.copiedMB ?? 0);
  });

  it('runs the memory probe in a child process', async () => {
    const results = await memoryCases(50, 1_000);
    expect(results).toHaveLength(3);
    for (const result of results) {
      expect(Object.keys(result.values ?? {})).not.toHaveLength(0);
      for (const value of Object.values(result.values ?? {}))
        expect(Number.isFinite(value)).toBe(true);
    }
  });

  it('runs the observe case: the same job unobserved, with no-op listeners and with metrics', async () => {
    const results = await observeCases(2_000, 1);
    expect(results.map((result) => result.name)).toEqual([
      'observe/no-listeners',
      'observe/no-op-listeners',
      'observe/metrics',
    ]);
    for (const result of results) {
      expect(result.msgsPerSec).toBeGreaterThan(0);
      expectSpread(result);
    }
    expect(Object.keys(results[2]?.ratios ?? {})).toEqual(['no-listeners']);
    expectRatioRanges(results);
  });

  it('runs the recovery case: crash with an open window, restart, first result', async () => {
    const results = await recoveryCases(1, [20]);
    expect(results[0]?.values?.msToFirstResult).toBeGreaterThan(0);
    expectSpread(results[0]);
  });

  it('runs the event-time cases, whose windows are checked against the step window first', async () => {
    const results = await eventTimeCases(400, 1, {
      openKeys: [1, 20],
      restartKeys: [20],
      countKeys: [20, 200],
      frameMax: 8_192,
    });
    const byName = new Map(results.map((result) => [result.name, result]));
    expect(byName.get('event-time/session/20-open-keys')?.ratios).toHaveProperty('stepTumbling');
    expectSpread(byName.get('event-time/session/20-open-keys'));
    expect(
      byName.get('event-time-state/hopping/20-open-keys')?.values?.retainedBytes,
    ).toBeGreaterThan(0);
    expect(
      byName.get('event-time-restart/20-open-windows')?.values?.reReadMessages,
    ).toBeGreaterThan(0);
    expect(Object.keys(byName.get('event-time-restart/20-open-windows')?.ratios ?? {})).toEqual([
      'uninterruptedSpan',
      'uninterruptedCaughtUp',
    ]);
    expectRatioRanges(results);
    const counts = byName.get('event-time-recovery-state/count-per-key')?.values;
    // Under an 8 KB frame some hundreds of open keys fit; the bisection found a bound, not 0.
    expect(counts?.mostOpenKeysInOneResult).toBeGreaterThan(20);
    expect(counts?.mostOpenKeysInOneResult).toBeLessThan(8_192);
  });

  it('runs the sink case into PGlite (no POSTGRES_URL), the tables of every side checked equal first', async () => {
    const results = await sinkCases({
      messages: 30,
      singleMessages: 5,
      repeats: 1,
      sizes: [1, 10],
    });
    expect(results.map((result) => result.name)).toEqual([
      'sink/pglite/1-per-transaction',
      'sink/pglite/10-per-transaction',
    ]);
    for (const result of results) {
      expect(result.msgsPerSec).toBeGreaterThan(0);
      expect(Object.keys(result.ratios)).toEqual(['best', 'values', 'unnest', 'copy']);
      // The best plain loop is the fastest: the sink's ratio to it is the least of the three.
      expect(result.ratios.best).toBe(
        Math.min(result.ratios.values ?? 0, result.ratios.unnest ?? 0, result.ratios.copy ?? 0),
      );
      expect(result.values?.bestMin).toBeLessThanOrEqual(result.values?.bestMax ?? 0);
      for (const name of [
        'cpuUsPerRow',
        'valuesCpuUsPerRow',
        'unnestCpuUsPerRow',
        'copyCpuUsPerRow',
      ]) {
        expect(result.values?.[name]).toBeGreaterThan(0);
      }
      expect(result.notes?.[0]).toMatch(
        /^the best plain loop: \w+ by rows\/s, \w+ by CPU per row$/,
      );
      expectSpread(result);
    }
    expect(results.map((result) => result.values?.rows)).toEqual([5, 30]);
    expectRatioRanges(results);
  });

  it('gives a throughput the min–max of its rounds: the slowest round is the minimum', () => {
    expect(throughput(1_000, [20, 10, 40])).toEqual({
      msgsPerSec: 50_000,
      msgsPerSecMin: 25_000,
      msgsPerSecMax: 100_000,
    });
  });

  it('runs the scaling case on the embedded broker: PartitionWorkers, 2 threads against 1, by CPU and wall', async () => {
    const [result, ...others] = await embeddedScalingCases(4_000, 1); // 1-second windows: 2,000 per partition close one
    expect(others).toEqual([]);
    expect(result?.name).toBe('scaling/embedded/2-threads-vs-1');
    expect(result?.ratios.oneThread).toBeGreaterThan(0);
    for (const name of ['cpuUsPerMsg', 'oneThreadCpuUsPerMsg', 'coresUsed', 'oneThreadCoresUsed']) {
      expect(result?.values?.[name]).toBeGreaterThan(0);
    }
    expect(result?.values?.oneThreadMin).toBeLessThanOrEqual(result?.values?.oneThreadMax ?? 0);
    expectRatioRanges([result]);
    expectSpread(result);
    expect(verdicts(result === undefined ? [] : [result]).map((verdict) => verdict.target)).toEqual(
      ['oneThread >= 1.8'],
    );
  });

  it('runs the merge case: 4 inputs against 1 (their windows checked equal first), and what an input ahead holds', async () => {
    const [inputs, skew, ...others] = await mergeCases(8_000, 1, 400); // 400 ms: 2,000 messages
    expect(others).toEqual([]);
    expect(inputs?.name).toBe('merge/4-inputs-vs-1');
    expect(inputs?.ratios.oneInputByCpu).toBeGreaterThan(0);
    expectRatioRanges([inputs]);
    expectSpread(inputs);
    const held = skew?.values ?? {};
    expect(held.skewMessages).toBe(2_000);
    // Unbounded, it holds the whole skew; bounded by 1,000, that and a chunk (500) at most.
    expect(held.heldUnbounded).toBeGreaterThanOrEqual(2_000);
    expect(held.held1000).toBeGreaterThanOrEqual(1_000);
    expect(held.held1000).toBeLessThanOrEqual(1_500);
  });
});
