import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  README_FILE,
  latestFigures,
  readLatest,
  readmeFigures,
  withLatestFigures,
  type ResultsFile,
} from '../../../bench/latest-figures.js';

const RUN: ResultsFile = {
  machine: '2 cores',
  node: 'v20',
  date: '2026-12-02T08:00:00.000Z',
  runMs: 125_000,
  cases: [
    {
      name: 'tumbling-1s/100-keys/rabbitmq',
      kind: 'e2e',
      msgsPerSec: 396_000,
      msgsPerSecMin: 250_000,
      msgsPerSecMax: 455_000,
      ratios: { hotPath: 0.73 },
      values: { hotPathMin: 0.46, hotPathMax: 0.84, hotPathMsgsPerSec: 542_000, cpuUsPerMsg: 1.5 },
    },
    // JSON writes NaN as null.
    { name: 'window-buffer/10-open-keys', kind: 'memory', msgsPerSec: null as never, ratios: {} },
  ],
};

describe('bench latest figures', () => {
  it("bench/README.md's block is bench/results/latest.json printed (a full run writes both)", () => {
    expect(readmeFigures(readFileSync(README_FILE, 'utf8'))).toBe(latestFigures(readLatest()));
  });

  it('prints each case with the spread of its rounds, its ratios folded with theirs, no baseline rates', () => {
    const block = latestFigures(RUN);
    expect(block).toContain('Run of 2026-12-02T08:00:00.000Z, 2 min 5 s (2 cores, Node v20)');
    expect(block).toMatch(
      /tumbling-1s\/100-keys\/rabbitmq +396k \(250k–455k\) +hotPath 0\.73 \(0\.46–0\.84\), cpuUsPerMsg 1\.50\n/,
    );
    expect(block).not.toContain('542');
    expect(block).toMatch(/window-buffer\/10-open-keys +-\n/);
  });

  it('replaces only the block between its markers, and says so when they are missing', () => {
    const text = `before\n${latestFigures(RUN)}\nafter\n`;
    const replaced = withLatestFigures(text, latestFigures({ ...RUN, cases: [] }));
    expect(replaced.startsWith('before\n')).toBe(true);
    expect(replaced.endsWith('\nafter\n')).toBe(true);
    expect(replaced).not.toContain('tumbling');
    expect(() => withLatestFigures('no block', 'x')).toThrow('has no latest-figures block');
  });
});
