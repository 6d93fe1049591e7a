// Invariants of the naive event-time reference model itself, over random out-of-order streams:
// before the engine is checked against the model, the model is checked against what the rules
// of issue 12 imply (every message counted once, windows closing exactly when the watermark
// passes end + grace, results chained over contiguous offsets).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import {
  eventTimeCaseArbitrary,
  type EventTimeCase,
} from '../support/arbitraries/event-time-arbitrary.js';
import { countEventTimeCoverage } from '../support/arbitraries/event-time-coverage.js';
import {
  referenceRunDetailed,
  type ReferenceOutput,
  type ReferenceRun,
} from '../support/models/event-time-reference.js';

const cases = eventTimeCaseArbitrary({ minMessages: 0, maxMessages: 300 });

/** wm after each offset: the latest event time of the messages so far (filtered ones have none). */
function watermarksAfter({ messages, config }: EventTimeCase): number[] {
  let maxTime = -Infinity;
  return messages.map((m) => {
    if (m.filtered !== true) maxTime = Math.max(maxTime, m.time);
    return maxTime - config.maxOutOfOrderness;
  });
}

function checkResultChain({ messages }: EventTimeCase, { results, pending }: ReferenceRun): void {
  let next = 0;
  for (const r of results) {
    expect(r.firstOffset).toBe(next);
    expect(r.decision).toBeGreaterThanOrEqual(r.firstOffset);
    expect(r.messages).toBe(r.decision - r.firstOffset + 1);
    next = r.decision + 1;
  }
  expect(pending.firstOffset).toBe(next);
  expect(pending.messages).toBe(messages.length - next);
  expect(results.reduce((n, r) => n + r.messages, 0)).toBe(next);
  const filtered = [...results, pending].reduce((n, r) => n + r.filtered, 0);
  expect(filtered).toBe(messages.filter((m) => m.filtered === true).length);
}

/** Every non-filtered message is in a window or late, once (hopping: in each open window). */
function checkEveryMessageCounted(c: EventTimeCase, run: ReferenceRun): void {
  const { messages, config } = c;
  const { window } = config;
  const windows: ReferenceOutput[] = [...run.results.flatMap((r) => r.outputs), ...run.open];
  const sections = [...run.results, run.pending];
  const lateValues = sections.flatMap((r) => r.late);
  const lateCount = lateValues.length + sections.reduce((n, r) => n + r.lateDropped, 0);
  if (config.late === 'drop') expect(lateValues).toEqual([]);
  else expect(sections.every((r) => r.lateDropped === 0)).toBe(true);
  if (window.type === 'count') expect(lateCount).toBe(0);
  const counted = messages.filter((m) => m.filtered !== true);
  const windowCount = windows.reduce((n, w) => n + w.count, 0);
  const windowSum = windows.reduce((s, w) => s + w.sum, 0);

  if (window.type === 'hopping') {
    // A message joins each of its windows not closed at its arrival: all of them, between
    // floor(size/advance) and ceil(size/advance), unless some closed already (partly late).
    const wmAfter = watermarksAfter(c);
    let expectedCount = 0;
    let expectedLate = 0;
    for (const m of counted) {
      const wm = m.offset === 0 ? -Infinity : (wmAfter[m.offset - 1] ?? -Infinity);
      const all =
        Math.floor(m.time / window.advance) - Math.floor((m.time - window.size) / window.advance);
      expect(all).toBeGreaterThanOrEqual(Math.floor(window.size / window.advance));
      expect(all).toBeLessThanOrEqual(Math.ceil(window.size / window.advance));
      const firstStart = Math.floor(m.time / window.advance) * window.advance;
      let open = 0;
      for (let i = 0; i < all; i++) {
        if (firstStart - i * window.advance + window.size + window.grace > wm) open++;
      }
      expectedCount += open;
      if (open === 0) expectedLate++;
    }
    expect(windowCount).toBe(expectedCount);
    expect(lateCount).toBe(expectedLate);
  } else {
    expect(windowCount + lateCount).toBe(counted.length);
    if (config.late === 'side') {
      const lateSum = lateValues.reduce((s, v) => s + v, 0);
      expect(windowSum + lateSum).toBe(counted.reduce((s, m) => s + m.value, 0));
    }
  }
  if (config.late === 'side') {
    // Values are distinct: a late value names its message, which is in no window then.
    const late = new Set(lateValues);
    expect(late.size).toBe(lateValues.length);
    for (const m of counted) {
      if (late.has(m.value)) continue;
      const inWindow = windows.some((w) => w.key === m.key && w.start <= m.time && m.time < w.end);
      expect(inWindow, `message at offset ${m.offset} in a window of its key`).toBe(true);
    }
  }
}

/** Each window closes at the first message whose new watermark reaches its end + grace. */
function checkClosing(c: EventTimeCase, run: ReferenceRun): void {
  const { window } = c.config;
  const wmAfter = watermarksAfter(c);
  const finalWm = wmAfter.at(-1) ?? -Infinity;
  for (const r of run.results) {
    const byEndThenStart = (a: ReferenceOutput, b: ReferenceOutput) =>
      a.end - b.end || a.start - b.start;
    expect(r.outputs).toEqual([...r.outputs].sort(byEndThenStart));
    if (window.type === 'count') {
      expect(r.outputs.map((w) => [w.key, w.count])).toEqual([
        [c.messages[r.decision]?.key, window.n],
      ]);
      continue;
    }
    const before = r.decision === 0 ? -Infinity : (wmAfter[r.decision - 1] ?? -Infinity);
    for (const w of r.outputs) {
      expect(w.end + window.grace).toBeLessThanOrEqual(wmAfter[r.decision] ?? -Infinity);
      expect(w.end + window.grace).toBeGreaterThan(before);
    }
  }
  if (window.type === 'count') {
    expect(run.open.every((w) => w.count < window.n)).toBe(true);
    expect(new Set(run.open.map((w) => w.key)).size).toBe(run.open.length);
  } else {
    expect(run.open.every((w) => w.end + window.grace > finalWm)).toBe(true);
  }
  if (window.type === 'tumbling' || window.type === 'hopping') {
    const windows = [...run.results.flatMap((r) => r.outputs), ...run.open];
    const ids = windows.map((w) => `${w.key}@${w.start}`);
    expect(new Set(ids).size).toBe(ids.length);
    expect(
      windows.every(
        (w) =>
          w.end - w.start === window.size &&
          w.start % (window.type === 'hopping' ? window.advance : window.size) === 0,
      ),
    ).toBe(true);
  }
  if (window.type === 'session') {
    const windows = [...run.results.flatMap((r) => r.outputs), ...run.open];
    expect(windows.every((w) => w.end - w.start >= window.gap)).toBe(true);
    // Open sessions of a key never touch: a message touching two would have merged them, so
    // their bounds, in order of start, strictly increase.
    for (const key of new Set(run.open.map((w) => w.key))) {
      const bounds = run.open
        .filter((w) => w.key === key)
        .sort((a, b) => a.start - b.start)
        .flatMap((w) => [w.start, w.end]);
      expect(bounds).toEqual([...new Set(bounds)].sort((x, y) => x - y));
    }
  }
}

describe('the event-time reference model', () => {
  it(
    'should count every message once, close each window when the watermark passes its end + grace, and chain its results over contiguous offsets',
    () => {
      const coverage = new Coverage('event-time reference');
      fc.assert(
        fc.property(cases, (c) => {
          coverage.run();
          const run = referenceRunDetailed(c.messages, c.config);
          countEventTimeCoverage(coverage, c, run);
          checkResultChain(c, run);
          checkEveryMessageCounted(c, run);
          checkClosing(c, run);
          // Within maxOutOfOrderness of the latest time, a message is never behind a window.
          if (c.disorder === 'bounded') {
            expect(
              [...run.results, run.pending].every((r) => r.late.length + r.lateDropped === 0),
            ).toBe(true);
          }
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 3 results': 0.8,
        'runs with late messages': 0.3,
        'late messages': 3,
        'runs with a session merge': 0.08,
        'session merges': 0.25,
        'runs with windows closing together': 0.5,
        'runs with filtered messages': 0.6,
        'runs with out-of-order messages': 0.7,
        'hopping runs with an advance dividing the size': 0.1,
        'hopping runs with an advance not dividing the size': 0.1,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
