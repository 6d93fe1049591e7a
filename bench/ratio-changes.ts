/**
 * Each ratio of a run beside the same ratio in bench/results/latest.json, the last full run's
 * file as it was before this run wrote anything, so that a ratio that moved is seen in the run
 * that moved it. A ratio is matched by its case's kind and name and the ratio's key, whatever
 * the case: a case gets the comparison by writing its ratios with their rounds' range
 * (`ratioRange`), with no code here.
 *
 * The rule (bench/README.md, "What changed since latest.json"): a ratio's spread is the max
 * minus the min of its per-round ratios (`<ratio>Min`, `<ratio>Max` in the case's values); it
 * MOVED when |now − before| > max(spread now, spread before), leaving out a spread a run did
 * not record; with neither, it is not judged.
 */
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import type { BenchConfig } from './config.js';
import { LATEST_FILE, readLatest, type ResultsFile } from './latest-figures.js';
import { table, type CaseResult } from './report.js';

/** A ratio's median and, when its case recorded them, the min and max of its rounds. */
export interface RatioFigure {
  readonly value: number;
  readonly min?: number;
  readonly max?: number;
}

export type RatioVerdict = 'moved' | 'within' | 'new' | 'no spread' | 'no figure';

/** Whose spread judged a ratio: a run that did not record one leaves the other's alone. */
export type SpreadSource = 'both' | 'this run' | 'latest.json';

export interface RatioChange {
  readonly kind: CaseResult['kind'];
  readonly name: string;
  readonly ratio: string;
  readonly now: RatioFigure;
  /** The same ratio in latest.json; undefined when it has none (a new case or ratio). */
  readonly before?: RatioFigure;
  /** The larger of the two runs' spreads, from the runs `spreadSource` names. */
  readonly spread?: number;
  readonly spreadSource?: SpreadSource;
  readonly verdict: RatioVerdict;
}

/** What a run compares with: latest.json as the run found it, or why there is nothing. */
export type Baseline =
  | { readonly path: string; readonly file: ResultsFile }
  | { readonly path: string; readonly missing: string };

/** latest.json before the run writes anything; missing or unreadable, the reason. */
export function readBaseline(path = LATEST_FILE): Baseline {
  if (!existsSync(path)) return { path, missing: 'there is none' };
  try {
    const file = readLatest(path);
    if (!Array.isArray(file.cases)) return { path, missing: 'it has no cases' };
    return { path, file };
  } catch (error) {
    return {
      path,
      missing: `unreadable: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/** `result`'s ratio `ratio` with its rounds' range from `<ratio>Min` and `<ratio>Max`. */
export function ratioFigure(result: CaseResult, ratio: string): RatioFigure {
  const values = result.values ?? {};
  return {
    value: result.ratios[ratio] ?? Number.NaN,
    min: finite(values[`${ratio}Min`]),
    max: finite(values[`${ratio}Max`]),
  };
}

/** Every ratio of `results`, in their order, against the same one in `before`. */
export function ratioChanges(
  results: readonly CaseResult[],
  before: ResultsFile | undefined,
): RatioChange[] {
  const earlier = new Map((before?.cases ?? []).map((result) => [caseKey(result), result]));
  return results.flatMap((result) =>
    Object.keys(result.ratios).map((ratio) => {
      const then = earlier.get(caseKey(result));
      const now = ratioFigure(result, ratio);
      return then === undefined || !(ratio in then.ratios)
        ? { kind: result.kind, name: result.name, ratio, now, verdict: 'new' as const }
        : { kind: result.kind, name: result.name, ratio, ...judged(now, ratioFigure(then, ratio)) };
    }),
  );
}

/** The comparison as a run prints it: the rule, the table, what each note in it means. */
export function formatRatioChanges(
  changes: readonly RatioChange[],
  baseline: Baseline,
  sizes: BenchConfig,
): string {
  const file = relative(process.cwd(), baseline.path) || baseline.path;
  const heading =
    'file' in baseline
      ? [
          `ratios against ${file} (run of ${baseline.file.date}): MOVED when |now − before| > ` +
            "max(spread now, spread before), a spread being the max − min of the ratio's rounds",
          ...sizesNote(sizes, baseline.file.config, file),
        ]
      : [`ratios: nothing to compare with in ${file} (${baseline.missing}): every ratio is new`];
  const rows = changes.map((change) => [
    change.kind,
    change.name,
    change.ratio,
    formatFigure(change.now),
    change.before === undefined ? '-' : formatFigure(change.before),
    change.before === undefined ? '-' : formatChange(change.now.value - change.before.value),
    formatSpread(change),
    change.verdict === 'moved' ? 'MOVED' : change.verdict,
  ]);
  const sources = new Set(changes.map((change) => change.spreadSource));
  const verdicts = changes.map((change) => change.verdict);
  return [
    ...heading,
    table(
      ['kind', 'case', 'ratio', 'now (min–max)', 'before (min–max)', 'change', 'spread', ''],
      rows,
    ),
    ...(sources.has('this run')
      ? [
          `(this run's): ${file} has no spread for the ratio (written before runs recorded one), ` +
            "so this run's alone decides; the next full run writes it",
        ]
      : []),
    ...(sources.has('latest.json')
      ? [`(latest.json's): this run recorded no spread for the ratio, so ${file}'s alone decides`]
      : []),
    ...(verdicts.includes('no spread')
      ? ["no spread: neither run recorded the ratio's rounds (<ratio>Min, <ratio>Max): not judged"]
      : []),
    `${verdicts.filter((verdict) => verdict === 'moved').length} of ${changes.length} ratios MOVED`,
  ].join('\n');
}

function judged(
  now: RatioFigure,
  before: RatioFigure,
): Pick<RatioChange, 'now' | 'before' | 'spread' | 'spreadSource' | 'verdict'> {
  if (!Number.isFinite(now.value) || !Number.isFinite(before.value)) {
    return { now, before, verdict: 'no figure' };
  }
  const spreadNow = spreadOf(now);
  const spreadBefore = spreadOf(before);
  const spread = Math.max(
    spreadNow ?? Number.NEGATIVE_INFINITY,
    spreadBefore ?? Number.NEGATIVE_INFINITY,
  );
  if (!Number.isFinite(spread)) return { now, before, verdict: 'no spread' };
  const spreadSource: SpreadSource =
    spreadNow === undefined ? 'latest.json' : spreadBefore === undefined ? 'this run' : 'both';
  const moved = Math.abs(now.value - before.value) > spread;
  return { now, before, spread, spreadSource, verdict: moved ? 'moved' : 'within' };
}

function spreadOf(figure: RatioFigure): number | undefined {
  return figure.min === undefined || figure.max === undefined ? undefined : figure.max - figure.min;
}

/** The sizes this run and latest.json's differ in: ratios move with sizes alone. */
function sizesNote(sizes: BenchConfig, then: BenchConfig | undefined, file: string): string[] {
  if (then === undefined) return [`${file} does not record its sizes (BENCH_*): compare with care`];
  const differ = (Object.keys(sizes) as (keyof BenchConfig)[])
    .filter((key) => JSON.stringify(sizes[key]) !== JSON.stringify(then[key]))
    .map((key) => `${key} ${JSON.stringify(sizes[key])} (there ${JSON.stringify(then[key])})`);
  return differ.length === 0
    ? []
    : [`sizes differ from ${file}'s, and ratios move with sizes alone: ${differ.join(', ')}`];
}

function caseKey(result: CaseResult): string {
  return `${result.kind} ${result.name}`;
}

/** A number of a results file, where JSON wrote NaN as null. */
function finite(value: number | null | undefined): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function formatFigure(figure: RatioFigure): string {
  const value = formatNumber(figure.value);
  return figure.min === undefined || figure.max === undefined
    ? value
    : `${value} (${formatNumber(figure.min)}–${formatNumber(figure.max)})`;
}

function formatChange(change: number): string {
  return Number.isFinite(change)
    ? `${change >= 0 ? '+' : '−'}${formatNumber(Math.abs(change))}`
    : '-';
}

function formatSpread(change: RatioChange): string {
  if (change.spread === undefined) return '-';
  const note = { both: '', 'this run': " (this run's)", 'latest.json': " (latest.json's)" };
  return `${formatNumber(change.spread)}${note[change.spreadSource ?? 'both']}`;
}

/** Two decimals; two significant digits under 0.1 (a lookup's 0.024), where two decimals say 0. */
function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return '-';
  return value !== 0 && Math.abs(value) < 0.1 ? value.toPrecision(2) : value.toFixed(2);
}
