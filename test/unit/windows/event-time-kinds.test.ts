import { describe, expect, it } from 'vitest';
import { compaction, count, hopping, session, tumbling } from '../../../src/index.js';
import { windowsOfAssignment } from '../../../src/windows/event-time-kinds.js';
import { neverTrigger } from '../../../src/windows/trigger.js';
import { isProbed, probeWindows, type WindowProbe } from '../../../src/windows/window-probe.js';
import type { WindowSpec } from '../../../src/windows/window-spec.js';
import { KindHarness } from './kind-harness.js';

function lone(windowsOf: (time: number, starts: number[], ends: number[]) => void, time: number) {
  const starts: number[] = [];
  const ends: number[] = [];
  windowsOf(time, starts, ends);
  return starts.map((start, i) => [start, ends[i]]);
}

describe('the registry of event-time window kinds', () => {
  it("builds the kind an assignment's type names: the same values, each kind's own windows", () => {
    const place = (harness: KindHarness) => {
      harness.place('k', 'v1', 100);
      harness.place('k', 'v2', 104);
      return [harness.open('k'), harness.closed.length];
    };
    expect(place(new KindHarness(tumbling(10, { grace: 0 }).assignment))).toEqual([
      [
        [
          [100, 110],
          ['v1', 'v2'],
        ],
      ],
      0,
    ]);
    expect(place(new KindHarness(session(3, { grace: 0 }).assignment))).toEqual([
      [
        [[100, 103], ['v1']],
        [[104, 107], ['v2']],
      ],
      0,
    ]);
    expect(place(new KindHarness(count(2, { perKey: true }).assignment))).toEqual([[], 1]);
  });

  it("probes a lone element's windows through its assignment's kind", () => {
    expect(lone(windowsOfAssignment(hopping(20, 10, { grace: 0 }).assignment), 15)).toEqual([
      [0, 20],
      [10, 30],
    ]);
    expect(lone(windowsOfAssignment(session(5, { grace: 0 }).assignment), 15)).toEqual([[15, 20]]);
    expect(lone(windowsOfAssignment(count(3, { perKey: true }).assignment), 15)).toEqual([
      [15, 16],
    ]);
  });
});

describe('the window probes of the range check', () => {
  it('has every built-in step kind say how its windows are probed, calendar ones as such', () => {
    const probe = (spec: object): WindowProbe => {
      if (!isProbed(spec)) throw new Error('not probed');
      return spec[probeWindows]();
    };
    expect(probe(tumbling('1d')).calendar).toBe(true);
    expect(probe(tumbling('1h')).calendar).toBe(false);
    expect(probe(tumbling('1mo', { grace: 0 })).calendar).toBe(true);
    expect(probe(compaction({ every: '1w' })).calendar).toBe(true);
    expect(probe(compaction({ count: 3 })).calendar).toBe(false);
    expect(lone(probe(session(7)).windowsOf, 1)).toEqual([[1, 8]]);
    expect(lone(probe(count(7)).windowsOf, 1)).toEqual([[1, 2]]);
    expect(lone(probe(tumbling(10)).windowsOf, 13)).toEqual([[10, 20]]);
  });

  it('has no probe for a step window of your own: its assigner may hold state', () => {
    const own: WindowSpec = {
      kind: 'mine',
      describe: () => 'mine',
      hasEventTimeBounds: true,
      createAssigner: () => tumbling('1m').createAssigner(),
      createTrigger: () => neverTrigger,
    };
    expect(isProbed(own)).toBe(false);
  });
});
