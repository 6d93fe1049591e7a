// Each ratio of a bench run beside bench/results/latest.json's (bench/ratio-changes.ts): which
// moved by more than the rounds' spread, which are new, and what a run without a file prints.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { benchConfig } from '../../../bench/config.js';
import type { ResultsFile } from '../../../bench/latest-figures.js';
import {
  formatRatioChanges,
  ratioChanges,
  readBaseline,
  type Baseline,
} from '../../../bench/ratio-changes.js';
import type { CaseResult } from '../../../bench/report.js';

const SIZES = benchConfig({});

/** A case with its ratios, each `[median, min, max]` or a median alone (no range recorded). */
function row(
  kind: CaseResult['kind'],
  name: string,
  ratios: Record<string, number | [number, number, number]>,
): CaseResult {
  const entries = Object.entries(ratios);
  return {
    kind,
    name,
    msgsPerSec: Number.NaN,
    ratios: Object.fromEntries(
      entries.map(([ratio, figure]) => [ratio, Array.isArray(figure) ? figure[0] : figure]),
    ),
    values: Object.fromEntries(
      entries.flatMap(([ratio, figure]) =>
        Array.isArray(figure)
          ? [
              [`${ratio}Min`, figure[1]],
              [`${ratio}Max`, figure[2]],
            ]
          : [],
      ),
    ),
  };
}

function file(cases: readonly CaseResult[], config = SIZES): ResultsFile {
  return { machine: '2 cores', node: 'v20', date: '2026-12-02T14:54:44.555Z', config, cases };
}

/** `case ratio: verdict (spread source)` per change, for short expectations. */
function verdictsOf(results: readonly CaseResult[], before: ResultsFile | undefined): string[] {
  return ratioChanges(results, before).map(
    (change) =>
      `${change.name} ${change.ratio}: ${change.verdict}` +
      (change.spreadSource === undefined ? '' : ` (${change.spreadSource})`),
  );
}

const BEFORE = file([
  row('hot-path', 'tumbling-1m/100-keys', { floor: [0.9, 0.85, 0.95], rxjs: [1.5, 1.4, 1.6] }),
  row('sink', 'sink/pglite/100-per-transaction', { plain: [0.66, 0.48, 0.81] }),
  row('e2e', 'tumbling-1s/100-keys/rabbitmq', { hotPath: [0.93, 0.78, 1.0] }),
]);

describe('bench ratios beside latest.json', () => {
  it('flags a ratio that moved by more than the larger spread, not one that moved within it', () => {
    const now = [
      // floor: +0.05 within 0.10; rxjs: +0.35 beyond 0.20.
      row('hot-path', 'tumbling-1m/100-keys', { floor: [0.95, 0.9, 1.0], rxjs: [1.85, 1.8, 1.9] }),
      // −0.20 beyond this run's 0.04, within latest.json's 0.33: the larger spread decides.
      row('sink', 'sink/pglite/100-per-transaction', { plain: [0.46, 0.44, 0.48] }),
    ];

    expect(verdictsOf(now, BEFORE)).toEqual([
      'tumbling-1m/100-keys floor: within (both)',
      'tumbling-1m/100-keys rxjs: moved (both)',
      'sink/pglite/100-per-transaction plain: within (both)',
    ]);
    const [floor, rxjs] = ratioChanges(now, BEFORE);
    expect(floor?.spread).toBeCloseTo(0.1);
    expect(rxjs?.spread).toBeCloseTo(0.2);
  });

  it('flags a move of exactly the spread as within (the rule is strictly more)', () => {
    // Binary fractions, so that the move and the spread are exactly 0.25.
    const before = file([row('hot-path', 'tumbling-1m/100-keys', { floor: [1, 0.875, 1.125] })]);
    const now = [row('hot-path', 'tumbling-1m/100-keys', { floor: [1.25, 1.125, 1.375] })];
    expect(verdictsOf(now, before)).toEqual(['tumbling-1m/100-keys floor: within (both)']);
    const beyond = [row('hot-path', 'tumbling-1m/100-keys', { floor: [1.375, 1.25, 1.5] })];
    expect(verdictsOf(beyond, before)).toEqual(['tumbling-1m/100-keys floor: moved (both)']);
  });

  it('prints a ratio latest.json lacks as new: a new ratio of a known case, and a new case', () => {
    const now = [
      row('sink', 'sink/pglite/100-per-transaction', {
        plain: [0.7, 0.6, 0.8],
        unnest: [0.5, 0.45, 0.55],
      }),
      row('sink', 'sink/postgres/10000-per-transaction', { plain: [0.8, 0.7, 0.9] }),
    ];

    expect(verdictsOf(now, BEFORE)).toEqual([
      'sink/pglite/100-per-transaction plain: within (both)',
      'sink/pglite/100-per-transaction unnest: new',
      'sink/postgres/10000-per-transaction plain: new',
    ]);
    const printed = formatRatioChanges(ratioChanges(now, BEFORE), baselineOf(BEFORE), SIZES);
    expect(printed).toMatch(
      /sink\/postgres\/10000-per-transaction +plain +0\.80 \(0\.70–0\.90\) +- +- +- +new/,
    );
  });

  it('compares only the ratios of the cases this run ran (a case run alone)', () => {
    const now = [row('e2e', 'tumbling-1s/100-keys/rabbitmq', { hotPath: [0.7, 0.6, 0.8] })];

    expect(verdictsOf(now, BEFORE)).toEqual([
      'tumbling-1s/100-keys/rabbitmq hotPath: moved (both)',
    ]);
    const printed = formatRatioChanges(ratioChanges(now, BEFORE), baselineOf(BEFORE), SIZES);
    expect(printed).not.toContain('tumbling-1m/100-keys');
    expect(printed).not.toContain('sink/');
    expect(printed).toContain('1 of 1 ratios MOVED');
  });

  it("falls back to this run's spread where latest.json recorded none, and says so", () => {
    const before = file([row('lookup', 'restart/100000-after', { 'distance-0': 1.02 })]);
    const within = [row('lookup', 'restart/100000-after', { 'distance-0': [0.9, 0.8, 1.1] })];
    const beyond = [row('lookup', 'restart/100000-after', { 'distance-0': [0.7, 0.65, 0.75] })];

    expect(verdictsOf(within, before)).toEqual([
      'restart/100000-after distance-0: within (this run)',
    ]);
    expect(verdictsOf(beyond, before)).toEqual([
      'restart/100000-after distance-0: moved (this run)',
    ]);
    const printed = formatRatioChanges(ratioChanges(beyond, before), baselineOf(before), SIZES);
    expect(printed).toMatch(
      /restart\/100000-after +distance-0 +0\.70 \(0\.65–0\.75\) +1\.02 +−0\.32 +0\.10 \(this run's\) +MOVED/,
    );
    expect(printed).toContain(
      "(this run's): latest.json has no spread for the ratio (written before runs recorded one), " +
        "so this run's alone decides; the next full run writes it",
    );
  });

  it("uses latest.json's spread alone when this run recorded none, and judges nothing without either", () => {
    const now = [
      row('hot-path', 'tumbling-1m/100-keys', { floor: 1.2, rxjs: 1.55 }),
      row('e2e', 'tumbling-1s/100-keys/rabbitmq', { hotPath: 0.5 }),
    ];
    const before = file([
      row('hot-path', 'tumbling-1m/100-keys', { floor: [0.9, 0.85, 0.95], rxjs: [1.5, 1.4, 1.6] }),
      row('e2e', 'tumbling-1s/100-keys/rabbitmq', { hotPath: 0.93 }),
    ]);

    expect(verdictsOf(now, before)).toEqual([
      'tumbling-1m/100-keys floor: moved (latest.json)',
      'tumbling-1m/100-keys rxjs: within (latest.json)',
      'tumbling-1s/100-keys/rabbitmq hotPath: no spread',
    ]);
    const printed = formatRatioChanges(ratioChanges(now, before), baselineOf(before), SIZES);
    expect(printed).toContain('no spread: neither run recorded');
    expect(printed).toContain("(latest.json's): this run recorded no spread");
  });

  it('judges no ratio a run could not take (NaN, written as null)', () => {
    const before = JSON.parse(
      JSON.stringify(
        file([row('scaling', 'scaling/rabbitmq/2-partitions', { onePartition: NaN })]),
      ),
    ) as ResultsFile;
    const now = [
      row('scaling', 'scaling/rabbitmq/2-partitions', { onePartition: [1.4, 1.3, 1.5] }),
    ];
    expect(verdictsOf(now, before)).toEqual([
      'scaling/rabbitmq/2-partitions onePartition: no figure',
    ]);
  });

  it('says where the sizes differ from latest.json, or that it recorded none', () => {
    const now = [row('hot-path', 'tumbling-1m/100-keys', { floor: [0.9, 0.85, 0.95] })];
    const quick = benchConfig({ BENCH_MESSAGES: '20000', BENCH_REPEATS: '3' });

    const printed = formatRatioChanges(ratioChanges(now, BEFORE), baselineOf(BEFORE), quick);
    expect(printed).toContain(
      "sizes differ from latest.json's, and ratios move with sizes alone: messages 20000 (there 1000000), observeMessages 5000 (there 250000), repeats 3 (there 5)",
    );
    const unsized: ResultsFile = { ...BEFORE, config: undefined };
    expect(formatRatioChanges(ratioChanges(now, unsized), baselineOf(unsized), SIZES)).toContain(
      'latest.json does not record its sizes',
    );
    expect(formatRatioChanges(ratioChanges(now, BEFORE), baselineOf(BEFORE), SIZES)).not.toMatch(
      /sizes/,
    );
  });
});

describe('the latest.json a run compares with', () => {
  const dirs: string[] = [];
  const scratch = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-latest-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('is read as the run found it', () => {
    const path = join(scratch(), 'latest.json');
    writeFileSync(path, JSON.stringify(BEFORE));
    expect(readBaseline(path)).toEqual({
      path,
      file: JSON.parse(JSON.stringify(BEFORE)) as unknown,
    });
  });

  it('missing, every ratio is new, and the run says there was nothing to compare with', () => {
    const path = join(scratch(), 'latest.json');
    const baseline = readBaseline(path);
    const now = [row('hot-path', 'tumbling-1m/100-keys', { floor: [0.9, 0.85, 0.95] })];

    expect(baseline).toEqual({ path, missing: 'there is none' });
    const changes = ratioChanges(now, 'file' in baseline ? baseline.file : undefined);
    expect(changes.map((change) => change.verdict)).toEqual(['new']);
    const printed = formatRatioChanges(changes, baseline, SIZES);
    expect(printed).toContain(`ratios: nothing to compare with in `);
    expect(printed).toContain('(there is none): every ratio is new');
    expect(printed).toContain('0 of 1 ratios MOVED');
  });

  it('unreadable or of another shape, the run says why and compares with nothing', () => {
    const dir = scratch();
    writeFileSync(join(dir, 'cut.json'), '{"cases": [');
    writeFileSync(join(dir, 'other.json'), '{"results": []}');

    expect(readBaseline(join(dir, 'cut.json'))).toMatchObject({
      missing: expect.stringMatching(/^unreadable: .*JSON/) as unknown,
    });
    expect(readBaseline(join(dir, 'other.json'))).toMatchObject({ missing: 'it has no cases' });
  });
});

function baselineOf(results: ResultsFile): Baseline {
  return { path: join(process.cwd(), 'latest.json'), file: results };
}
