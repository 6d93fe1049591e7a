// The engine against a deliberately naive model of the window semantics documented in the
// README: for random streams and windows, the published outputs equal the model's.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregate, decodeResult, jsonMessage, type LatePolicy } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { Coverage, propertyParameters } from '../support/arbitraries/coverage.js';

interface Event {
  key: string;
  value: number;
  t: number;
}
type Window =
  | { kind: 'tumbling'; size: number }
  | { kind: 'count'; n: number }
  | { kind: 'session'; gap: number };
interface Step {
  first: number;
  last: number;
  start: number;
  end: number;
  sums: Map<string, { count: number; sum: number }>;
  late: Event[];
}

/** Steps of `events` as the README defines them, with the 'side' late policy. */
function model(events: readonly Event[], window: Window): Step[] {
  const steps: Step[] = [];
  let open: (Step & { min: number; max: number; n: number }) | undefined;
  const close = () => {
    if (open === undefined) return;
    const { min, max } = open;
    if (window.kind === 'count') Object.assign(open, { start: min, end: max + 1 });
    if (window.kind === 'session') Object.assign(open, { start: min, end: max + window.gap });
    steps.push(open);
    open = undefined;
  };
  events.forEach((e, offset) => {
    if (open !== undefined) {
      const later =
        (window.kind === 'tumbling' && e.t >= open.end) ||
        (window.kind === 'session' && e.t - open.max > window.gap);
      const late =
        (window.kind === 'tumbling' && e.t < open.start) ||
        (window.kind === 'session' && open.min - e.t > window.gap);
      if (later) close();
      else if (late) {
        open.late.push(e);
        open.last = offset;
        return;
      }
    }
    if (open === undefined) {
      const start = window.kind === 'tumbling' ? Math.floor(e.t / window.size) * window.size : e.t;
      const end = window.kind === 'tumbling' ? start + window.size : e.t;
      open = {
        first: offset,
        last: offset,
        start,
        end,
        sums: new Map(),
        late: [],
        min: e.t,
        max: e.t,
        n: 0,
      };
    }
    open.last = offset;
    open.min = Math.min(open.min, e.t);
    open.max = Math.max(open.max, e.t);
    const acc = open.sums.get(e.key) ?? { count: 0, sum: 0 };
    open.sums.set(e.key, { count: acc.count + 1, sum: acc.sum + e.value });
    if (window.kind === 'count' && ++open.n === window.n) close();
  });
  return steps; // the open step is not published
}

const eventsArb = fc
  .array(
    fc.record({
      key: fc.constantFrom('a', 'b', 'c'),
      value: fc.integer({ min: -50, max: 50 }),
      // Quarter seconds, so that times often fall exactly on window bounds and gaps.
      step: fc.integer({ min: -12, max: 24 }).map((q) => q * 250),
    }),
    // Up to hundreds of events: many steps per run, of every window kind.
    { minLength: 20, maxLength: 300, size: 'max' },
  )
  .map((raw) => {
    let t = 1_000_000;
    return raw.map(({ key, value, step }) => ({ key, value, t: (t += step) }));
  });

const windowArb: fc.Arbitrary<Window> = fc.oneof(
  fc.integer({ min: 1, max: 8 }).map((s) => ({ kind: 'tumbling' as const, size: s * 1000 })),
  fc.integer({ min: 1, max: 6 }).map((n) => ({ kind: 'count' as const, n })),
  fc.integer({ min: 1, max: 8 }).map((g) => ({ kind: 'session' as const, gap: g * 500 })),
);

describe('the engine against a reference model', () => {
  it('should publish exactly the steps, bounds, keyed sums and late values of the model', async () => {
    const coverage = new Coverage('reference model');
    await fc.assert(
      fc.asyncProperty(
        eventsArb,
        windowArb,
        fc.integer({ min: 1, max: 7 }),
        async (events, window, chunk) => {
          coverage.run();
          const broker = new MemoryBroker({ now: () => 0 });
          broker.createStream('in');
          broker.createStream('out');
          for (let i = 0; i < events.length; i += chunk) {
            broker.append(
              'in',
              events.slice(i, i + chunk).map((e) => jsonMessage(e)),
            );
          }
          let pipeline = aggregate<Event>(broker.source('in')).eventTime((e) => e.t);
          if (window.kind === 'tumbling') pipeline = pipeline.tumbling(window.size);
          if (window.kind === 'count') pipeline = pipeline.count(window.n);
          if (window.kind === 'session') pipeline = pipeline.session(window.gap);
          if (window.kind !== 'count') pipeline = pipeline.late('side' satisfies LatePolicy);
          await pipeline
            .key((e) => e.key)
            .reduce((sum: number, e) => sum + e.value, 0)
            .to(broker.target('out', { producer: 'p' }))
            .run({ untilCaughtUp: true });

          const actual = broker.messages('out').map((m) => {
            const r = decodeResult<number>(m.bytes);
            return {
              first: Number(r.firstOffset),
              last: Number(r.lastOffset),
              outputs: r.outputs.map((o) => [o.key, o.start, o.end, o.count, o.value]),
              late: r.late,
            };
          });
          const expected = model(events, window).map((s) => ({
            first: s.first,
            last: s.last,
            outputs: [...s.sums].map(([key, { count, sum }]) => [key, s.start, s.end, count, sum]),
            late: s.late,
          }));
          expect(actual).toEqual(expected);

          const steps = model(events, window);
          coverage.add('steps', steps.length);
          coverage.count(`${window.kind} with >= 3 steps`, steps.length >= 3);
          coverage.count(
            'runs with late values',
            steps.some((s) => s.late.length > 0),
          );
          coverage.count(
            'runs with a step of several keys',
            steps.some((s) => s.sums.size > 1),
          );
          coverage.count('runs of chunks of several messages', chunk > 1);
          // An event exactly on the boundary: at a tumbling end, or exactly one gap later.
          coverage.count(
            `${window.kind} runs with an event exactly on a bound`,
            events.some((e, i) => {
              const previous = events[i - 1];
              if (window.kind === 'tumbling') return e.t % window.size === 0;
              return (
                window.kind === 'session' &&
                previous !== undefined &&
                e.t - previous.t === window.gap
              );
            }),
          );
        },
      ),
      propertyParameters(),
    );
    coverage.expectRates({
      'tumbling with >= 3 steps': 0.3,
      'count with >= 3 steps': 0.28,
      'session with >= 3 steps': 0.28,
      'runs with late values': 0.5,
      'runs with a step of several keys': 0.9,
      'runs of chunks of several messages': 0.8,
      'tumbling runs with an event exactly on a bound': 0.32,
      'session runs with an event exactly on a bound': 0.2,
    });
  });
});
