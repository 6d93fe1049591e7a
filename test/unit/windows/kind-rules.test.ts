import { afterEach, describe, expect, it } from 'vitest';
import { aggregate, count, hopping, session, tumbling } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { alignedWindows } from '../../../src/windows/aligned-windows.js';
import type { KindRules } from '../../../src/windows/event-time-kind.js';
import { rulesOf } from '../../../src/windows/event-time-kinds.js';
import { perKeyCounts } from '../../../src/windows/per-key-counts.js';

const broker = new MemoryBroker();
broker.createStream('s');
const source = broker.source('s');

/** The registry entries' own rules, put back after each test that changes one. */
const saved = [alignedWindows, perKeyCounts].map((kind) => [kind, { ...kind }] as const);
afterEach(() => {
  for (const [kind, rules] of saved) Object.assign(kind, rules);
});

/** Changes one rule of a registered kind, as a kind of its own would answer it. */
function answer(kind: KindRules, rules: Partial<KindRules>): void {
  Object.assign(kind, rules);
}

describe("each event-time kind's rules", () => {
  it('are answered by the kind an assignment names', () => {
    const rules = (spec: { assignment: Parameters<typeof rulesOf>[0] }) => {
      const { closedByWatermark, mergesWindows } = rulesOf(spec.assignment);
      return { closedByWatermark, mergesWindows };
    };
    expect(rules(tumbling('1m', { grace: 0 }))).toEqual({
      closedByWatermark: true,
      mergesWindows: false,
    });
    expect(rules(hopping('1m', '30s', { grace: 0 }))).toEqual({
      closedByWatermark: true,
      mergesWindows: false,
    });
    expect(rules(session('1m', { grace: 0 }))).toEqual({
      closedByWatermark: true,
      mergesWindows: true,
    });
    expect(rules(count(2, { perKey: true }))).toEqual({
      closedByWatermark: false,
      mergesWindows: false,
    });
  });

  it("drive the builder's merge check: a kind that merges needs the aggregate's merge", () => {
    const sum = () =>
      aggregate<number>(source)
        .tumbling('1m', { grace: 0 })
        .reduce((total, value) => total + value, 0);
    expect(sum).not.toThrow();
    answer(alignedWindows, { mergesWindows: true });
    expect(sum).toThrow(
      /^aggregate merge is needed by tumbling\(1m, grace=0ms\): a message that bridges two sessions/,
    );
  });

  it("drive the builder's late and maxOutOfOrderness checks: the watermark closing a kind's windows", () => {
    const perKey = () => aggregate(source).count(2, { perKey: true });
    expect(() => perKey().late('drop')).toThrow(
      /^late policy applies only to windows with event-time bounds, not count\(2, perKey\)/,
    );
    expect(() => perKey().maxOutOfOrderness('1s')).toThrow(
      /^maxOutOfOrderness applies only to event-time windows with a grace/,
    );
    answer(perKeyCounts, { closedByWatermark: true });
    expect(() => perKey().late('drop').maxOutOfOrderness('1s')).not.toThrow();
    // An event-time window's late messages are published already, whatever its kind.
    expect(() => perKey().late('include')).toThrow(
      /^late policy must be 'drop' or 'side' for count\(2, perKey\)/,
    );
  });
});
