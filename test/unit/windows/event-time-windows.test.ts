import { describe, expect, it } from 'vitest';
import { count, hopping, session, tumbling } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, ConfigError } from '../../../src/index.js';
import { untyped } from './drive.js';

function assigned(spec: { assignment: { type: string } }, time: number): [number, number][] {
  const { assignment } = spec as {
    assignment: {
      type: 'aligned';
      createAssigner(): { assign(t: number, s: number[], e: number[]): void };
    };
  };
  const starts: number[] = [];
  const ends: number[] = [];
  assignment.createAssigner().assign(time, starts, ends);
  return starts.map((start, i) => [start, ends[i] as number]);
}

describe('event-time window specs', () => {
  it('refuses hopping windows without their options with a ConfigError naming the required one', () => {
    const call = (options: unknown) => () =>
      hopping('1m', '15s', options as Parameters<typeof hopping>[2]);
    for (const options of [undefined, null, 5]) {
      expect(call(options)).toThrow(ConfigError);
      expect(call(options)).toThrow(/hopping options.*grace/);
    }
  });

  it('describes each kind with its grace', () => {
    expect(tumbling('1m', { grace: '30s' }).describe()).toBe('tumbling(1m, grace=30s)');
    expect(tumbling('1d', { grace: 0, timeZone: 'Europe/Paris' }).describe()).toBe(
      'tumbling(1d, tz=Europe/Paris, grace=0ms)',
    );
    expect(hopping('1m', '15s', { grace: '5s' }).describe()).toBe(
      'hopping(1m, advance=15s, grace=5s)',
    );
    // The description is the window's name in every result (`sw-window`): an offset is in it.
    expect(hopping('1m', '15s', { grace: '5s', offset: '5s' }).describe()).toBe(
      'hopping(1m, advance=15s, offset=5s, grace=5s)',
    );
    expect(session('30s', { grace: '1m' }).describe()).toBe('session(30s, grace=1m)');
    expect(count(3, { perKey: true }).describe()).toBe('count(3, perKey)');
  });

  it('keeps a tumbling window without grace a step window', () => {
    expect('assignment' in tumbling('1m')).toBe(false);
    expect('assignment' in session('1m')).toBe(false);
    expect('assignment' in count(2)).toBe(false);
    expect('assignment' in count(2, { perKey: false })).toBe(false);
  });

  it('refuses an event-time window whose grace is missing, negative or not a duration', () => {
    expect(() => tumbling('1m', { grace: untyped(undefined) })).toThrow(
      "tumbling grace must be given for an event-time window: how long after a window's end it still takes late elements (0 for none), given: undefined",
    );
    expect(() => hopping('1m', '10s', untyped({}))).toThrow(/hopping grace must be given/);
    expect(() => session('1m', { grace: -1 })).toThrow('session grace must be >= 0, given: -1');
    expect(() => tumbling('1m', { grace: untyped('1d') })).toThrow(
      /tumbling grace must be a fixed duration/,
    );
  });

  it('refuses a hopping advance larger than the size, and an offset not below the advance', () => {
    expect(() => hopping('10s', '11s', { grace: 0 })).toThrow(
      "hopping advance must be at most the size (10s); a larger advance would leave gaps no window covers, given: '11s'",
    );
    expect(() => hopping('10s', '5s', { grace: 0, offset: '5s' })).toThrow(
      "hopping offset must be less than the advance (5s), given: '5s'",
    );
    expect(() => hopping('10s', 0, { grace: 0 })).toThrow('hopping advance must be > 0, given: 0');
    expect(() => hopping(0, 0, { grace: 0 })).toThrow('hopping size must be > 0, given: 0');
    expect(() => hopping('10s', '5s', { grace: 0, offset: -1 })).toThrow(
      'hopping offset must be >= 0, given: -1',
    );
    // An advance equal to the size is allowed: tumbling windows.
    expect(assigned(hopping(10, 10, { grace: 0 }), 15)).toEqual([[10, 20]]);
  });

  it('refuses a hopping window that gives an element more than 1000 windows, in the builder too', () => {
    expect(() => hopping('24000h', '1ms', { grace: 0 })).toThrow(
      new ConfigError(
        'hopping advance',
        'must give each element at most 1000 windows (size / advance, rounded up); 24000h / 1ms gives 86400000000',
        '1ms',
      ),
    );
    // The ratio is rounded up (an advance that does not divide the size); the limit itself passes.
    expect(() => hopping(1001, 1, { grace: 0 })).toThrow(/at most 1000 windows.* gives 1001,/);
    expect(() => hopping(100_001, 100, { grace: 0 })).toThrow(/gives 1001, given: 100$/);
    expect(assigned(hopping(1000, 1, { grace: 0 }), 5_000)).toHaveLength(1000);
    expect(assigned(hopping(100_000, 100, { grace: 0, offset: 7 }), 5_000)).toHaveLength(1000);
    const broker = new MemoryBroker();
    broker.createStream('s');
    expect(() => aggregate(broker.source('s')).hopping('1h', '3ms', { grace: 0 })).toThrow(
      "hopping advance must give each element at most 1000 windows (size / advance, rounded up); 1h / 3ms gives 1200000, given: '3ms'",
    );
  });

  it('refuses a perKey option that is not a boolean', () => {
    expect(() => count(2, { perKey: 'yes' as unknown as boolean })).toThrow(
      "count perKey must be a boolean, given: 'yes'",
    );
  });

  it('puts an element in size/advance hopping windows, earliest first, negative times included', () => {
    const spec = hopping(10, 5, { grace: 0 });
    expect(assigned(spec, 12)).toEqual([
      [5, 15],
      [10, 20],
    ]);
    expect(assigned(spec, -3)).toEqual([
      [-10, 0],
      [-5, 5],
    ]);
    // An advance that does not divide the size: 10 / 4 gives 2 or 3 windows.
    expect(assigned(hopping(10, 4, { grace: 0 }), 8)).toEqual([
      [0, 10],
      [4, 14],
      [8, 18],
    ]);
    expect(assigned(hopping(10, 4, { grace: 0 }), 10)).toEqual([
      [4, 14],
      [8, 18],
    ]);
    expect(assigned(hopping(10, 5, { grace: 0, offset: 2 }), 6)).toEqual([
      [-3, 7],
      [2, 12],
    ]);
  });
});

describe('event-time windows in a pipeline', () => {
  const broker = new MemoryBroker();
  broker.createStream('s');
  const source = broker.source('s');

  it("refuses the 'include' late policy, whose late values would belong to published windows", () => {
    expect(() =>
      aggregate(source)
        .window(tumbling('1m', { grace: 0 }))
        .late('include'),
    ).toThrow(
      "late policy must be 'drop' or 'side' for tumbling(1m, grace=0ms): its late messages belong to windows already published, given: 'include'",
    );
    expect(() => aggregate(source).late('include').hopping('1m', '30s', { grace: 0 })).toThrow(
      ConfigError,
    );
  });

  it('refuses a late policy for per-key count windows, which have no event-time bounds', () => {
    expect(() => aggregate(source).count(2, { perKey: true }).late('drop')).toThrow(
      /late policy applies only to windows with event-time bounds, not count\(2, perKey\)/,
    );
  });

  it('refuses maxOutOfOrderness for a step window or a count window, in either order', () => {
    expect(() => aggregate(source).tumbling('1m').maxOutOfOrderness('1s')).toThrow(
      "maxOutOfOrderness applies only to event-time windows with a grace (tumbling, hopping or session with grace), not tumbling(1m), given: 'tumbling(1m)'",
    );
    expect(() => aggregate(source).maxOutOfOrderness('1s').count(2, { perKey: true })).toThrow(
      ConfigError,
    );
    expect(() => aggregate(source).maxOutOfOrderness(-1)).toThrow(
      'maxOutOfOrderness must be >= 0, given: -1',
    );
  });

  it('refuses per-key sessions over an aggregate that cannot merge two sessions', () => {
    expect(() =>
      aggregate<number>(source)
        .session('1m', { grace: 0 })
        .reduce((sum, value) => sum + value, 0),
    ).toThrow(/aggregate merge is needed by session\(1m, grace=0ms\)/);
    expect(() =>
      aggregate<number>(source)
        .session('1m', { grace: 0 })
        .reduce((a, b) => a + b),
    ).not.toThrow();
  });
});
