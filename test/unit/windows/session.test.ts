import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { Placement, session, TriggerResult } from '../../../src/windows/index.js';
import { drive, thrown, untyped } from './drive.js';

const GAP = 30_000;

function openAt(...times: number[]) {
  const assigner = session('30s').createAssigner();
  const [first = 0, ...rest] = times;
  assigner.open(first);
  assigner.add(first);
  for (const t of rest) assigner.add(t);
  return assigner;
}

describe('session windows', () => {
  it('should span a single element plus the gap', () => {
    expect(openAt(1000).snapshot()).toEqual({ start: 1000, end: 1000 + GAP });
  });

  it('should keep an element exactly one gap after the latest in the session', () => {
    const assigner = openAt(0, 10_000);
    expect(assigner.place(10_000 + GAP)).toBe(Placement.Inside);
    expect(assigner.place(10_000 + GAP + 1)).toBe(Placement.Later);
  });

  it('should measure the gap from the latest event time, not the previous element', () => {
    const { fired, open } = drive(session('30s'), [0, 20_000, 5_000, 50_000, 80_001]);
    expect(fired).toEqual([{ times: [0, 20_000, 5_000, 50_000], start: 0, end: 50_000 + GAP }]);
    expect(open).toEqual({ times: [80_001], start: 80_001, end: 80_001 + GAP });
  });

  it('should extend the start for an out-of-order element within the gap', () => {
    const assigner = openAt(100_000);
    expect(assigner.place(100_000 - GAP)).toBe(Placement.Inside);
    assigner.add(80_000);
    expect(assigner.snapshot()).toEqual({ start: 80_000, end: 100_000 + GAP });
    expect(assigner.place(80_000 - GAP - 1)).toBe(Placement.Late);
    expect(assigner.place(80_000 - GAP)).toBe(Placement.Inside);
  });

  it('should leave the session unchanged when a late element is included', () => {
    const { open, late } = drive(session('30s'), [100_000, 1_000, 110_000], 'include');
    expect(late).toEqual([1_000]);
    expect(open).toEqual({ times: [100_000, 1_000, 110_000], start: 100_000, end: 110_000 + GAP });
  });

  it('should handle sessions before the epoch', () => {
    const { fired, open } = drive(session(10), [-100, -95, -80]);
    expect(fired).toEqual([{ times: [-100, -95], start: -100, end: -85 }]);
    expect(open).toEqual({ times: [-80], start: -80, end: -70 });
  });

  it('should never fire on its own', () => {
    expect(session('1s').createTrigger().onElement()).toBe(TriggerResult.Continue);
  });

  it('should describe its settings', () => {
    const spec = session('30000ms');
    expect(spec.kind).toBe('session');
    expect(spec.hasEventTimeBounds).toBe(true);
    expect(spec.describe()).toBe('session(30s)');
  });

  it.each([
    [0, 'session gap must be > 0, given: 0'],
    ['-1s', "session gap must be > 0, given: '-1s'"],
    ['a while', "given: 'a while'"],
    ['1d', "use hours instead (e.g. '24h'), given: '1d'"],
  ])('should reject the gap %j naming the parameter, the rule and the value', (gap, text) => {
    const error = thrown(() => session(untyped(gap)));
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/^session gap must /);
    expect(error.message).toContain(text);
  });
});
