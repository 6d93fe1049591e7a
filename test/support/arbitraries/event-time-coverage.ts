// What an event-time case exercised, counted on a Coverage
// (test/support/arbitraries/coverage.ts) from the reference model's run of it: a property that
// checks the engine against the model uses the same labels, so that both report the same
// figures for the same generator.
import type { Coverage } from './coverage.js';
import type { EventTimeCase } from './event-time-arbitrary.js';
import type { ReferenceRun } from '../models/event-time-reference.js';

/**
 * Counts, for one run: its results ('results', added), and whether it had at least 3 results,
 * late messages, a session merge, several windows closing at one message, an out-of-order
 * message, filtered messages, and (hopping) an advance dividing the size or not.
 */
export function countEventTimeCoverage(
  coverage: Coverage,
  { messages, config, disorder }: EventTimeCase,
  run: ReferenceRun,
): void {
  const { results, pending, sessionMerges } = run;
  const late = [...results, pending].reduce((n, r) => n + r.late.length + r.lateDropped, 0);
  const { window } = config;
  coverage.add('results', results.length);
  coverage.add('late messages', late);
  coverage.add('session merges', sessionMerges);
  coverage.count(`${window.type} runs`);
  coverage.count(`${disorder} runs`);
  coverage.count('runs with >= 3 results', results.length >= 3);
  coverage.count('runs with late messages', late > 0);
  coverage.count('runs with a session merge', sessionMerges > 0);
  coverage.count(
    'runs with windows closing together',
    results.some((r) => r.outputs.length >= 2),
  );
  coverage.count(
    'runs with filtered messages',
    pending.filtered > 0 || results.some((r) => r.filtered > 0),
  );
  let maxTime = -Infinity;
  const outOfOrder = messages.some((m) => {
    if (m.filtered === true) return false;
    const behind = m.time < maxTime;
    maxTime = Math.max(maxTime, m.time);
    return behind;
  });
  coverage.count('runs with out-of-order messages', outOfOrder);
  if (window.type === 'hopping') {
    const divides = window.size % window.advance === 0;
    coverage.count(`hopping runs with an advance ${divides ? '' : 'not '}dividing the size`);
  }
}
