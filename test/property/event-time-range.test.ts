import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  aggregate,
  count,
  decodeResult,
  hopping,
  jsonMessage,
  session,
  tumbling,
  type DecodedResult,
  type WindowSpec,
} from '../../src/index.js';
import type { EventTimeWindowSpec } from '../../src/windows/event-time-spec.js';
import { KeyedWindows } from '../../src/windows/keyed-windows.js';
import { MemoryBroker } from '../../src/memory/index.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';

// Event times at the edges of Date's range (±8.64e15 ms), for every window kind: an edge time
// whose windows cannot be represented, or (closed by the watermark) could never be closed, must
// be refused as an 'event-time' dead letter before any of its windows reaches the window state,
// and the rest of the stream must give exactly the windows it gives without those messages.

const LIMIT = 8.64e15;
const DAY = 86_400_000;
const T0 = Date.UTC(2024, 0, 1);
const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Asia/Kolkata',
  'Australia/Lord_Howe',
  'Pacific/Kiritimati',
  'America/St_Johns',
];

/** A window kind with the scale of its windows (how far from an edge its bounds reach). */
interface Kind {
  readonly family: string;
  readonly spec: WindowSpec | EventTimeWindowSpec;
  readonly scale: number;
  /** The windows of an element at `time` alone; undefined: ask the assigner (calendar). */
  readonly windowsOf: ((time: number) => [number, number][]) | undefined;
  /** Windows closed by the watermark: the job's maxOutOfOrderness, and the grace with it. */
  readonly watermark?: { readonly maxOutOfOrderness: number; readonly closedAfter: number };
}

const floorMod = (value: number, modulus: number): number =>
  ((value % modulus) + modulus) % modulus;

const fixedSize = fc.oneof(
  fc.integer({ min: 1, max: 100 }),
  fc.integer({ min: 1, max: 40 * DAY }),
  fc.integer({ min: 1, max: 1e14 }),
);
/** A grace for an event-time window, or none for a step window (half the runs each). */
const grace = fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 3 * DAY }));
const outOfOrderness = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 * DAY }));

/** The watermark settings of a window the watermark closes with `graceMs`. */
const watermarkOf = (graceMs: number | undefined, maxOutOfOrderness: number) =>
  graceMs === undefined
    ? {}
    : { watermark: { maxOutOfOrderness, closedAfter: graceMs + maxOutOfOrderness } };

const fixedTumbling = fc
  .tuple(
    fixedSize,
    fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    grace,
    outOfOrderness,
  )
  .map(([size, at, graceMs, ooo]): Kind => {
    const offset = Math.floor(at * size);
    const spec =
      graceMs === undefined
        ? tumbling(size, { offset })
        : tumbling(size, { offset, grace: graceMs });
    return {
      family: graceMs === undefined ? 'step tumbling fixed' : 'tumbling fixed',
      spec,
      scale: size,
      windowsOf: (time) => {
        const start = time - floorMod(time - offset, size);
        return [[start, start + size]];
      },
      ...watermarkOf(graceMs, ooo),
    };
  });

const calendarTumbling = fc
  .record({
    unit: fc.constantFrom('1d', '1w', '1mo'),
    timeZone: fc.constantFrom(...ZONES),
    offset: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: DAY - 1 })),
    weekStartsOn: fc.constantFrom(0, 1, 2, 3, 4, 5, 6),
    grace,
    ooo: outOfOrderness,
  })
  .map(({ unit, timeZone, offset, weekStartsOn, grace: graceMs, ooo }): Kind => {
    const options = {
      timeZone,
      offset,
      ...(unit === '1w' ? { weekStartsOn: weekStartsOn as 0 } : {}),
    };
    const spec =
      graceMs === undefined
        ? tumbling(unit, options)
        : tumbling(unit, { ...options, grace: graceMs });
    return {
      family: graceMs === undefined ? 'step tumbling calendar' : 'tumbling calendar',
      spec,
      scale: 32 * DAY,
      windowsOf: undefined,
      ...watermarkOf(graceMs, ooo),
    };
  });

const hoppingKind = fc
  .record({
    advance: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 10 * DAY })),
    windows: fc.integer({ min: 1, max: 1000 }),
    extra: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    grace: fc.integer({ min: 0, max: DAY }),
    ooo: outOfOrderness,
  })
  .map(({ advance, windows, extra, at, grace: graceMs, ooo }): Kind => {
    // size / advance rounded up is at most 1000: size in ((windows-1)·advance, windows·advance].
    const size = Math.max(advance, (windows - 1) * advance + 1 + Math.floor(extra * (advance - 1)));
    const offset = Math.floor(at * advance);
    return {
      family: 'hopping',
      spec: hopping(size, advance, { offset, grace: graceMs }),
      scale: size,
      windowsOf: (time) => {
        const latest = time - floorMod(time - offset, advance);
        const own: [number, number][] = [];
        for (let start = latest; start > time - size; start -= advance)
          own.push([start, start + size]);
        return own;
      },
      ...watermarkOf(graceMs, ooo),
    };
  });

const sessionKind = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: 1e14 })),
    grace,
    outOfOrderness,
  )
  .map(([gap, graceMs, ooo]): Kind => ({
    family: graceMs === undefined ? 'step session' : 'session',
    spec: graceMs === undefined ? session(gap) : session(gap, { grace: graceMs }),
    scale: gap,
    windowsOf: (time) => [[time, time + gap]],
    ...watermarkOf(graceMs, ooo),
  }));

const countKind = fc
  .tuple(fc.integer({ min: 1, max: 4 }), fc.boolean())
  .map(([n, perKey]): Kind => ({
    family: perKey ? 'count per key' : 'step count',
    spec: count(n, { perKey }),
    scale: 3,
    windowsOf: (time) => [[time, time + 1]],
  }));

const kinds = fc.oneof(fixedTumbling, calendarTumbling, hoppingKind, sessionKind, countKind);

/** The one rule, restated here from the README: finite bounds within Date's range. */
const representable = ([start, end]: [number, number]): boolean =>
  Number.isFinite(start) && Number.isFinite(end) && start >= -LIMIT && end <= LIMIT && start < end;

/**
 * And a window the watermark closes must be closable: an event time of a time window is below
 * LIMIT (one at LIMIT has a window ending past it), so the watermark, that time less the
 * maxOutOfOrderness, reaches end + grace only if end + grace + maxOutOfOrderness < LIMIT.
 */
const closable = (kind: Kind, [, end]: [number, number]): boolean =>
  kind.watermark === undefined || end + kind.watermark.closedAfter < LIMIT;

/** The windows of an element at `time` as the kind's own assigner gives them (calendar sizes). */
function assignerWindows(spec: WindowSpec | EventTimeWindowSpec, time: number): [number, number][] {
  if ('assignment' in spec) {
    if (spec.assignment.type !== 'aligned') throw new Error('calendar windows are aligned');
    const starts: number[] = [];
    const ends: number[] = [];
    try {
      spec.assignment.createAssigner().assign(time, starts, ends);
    } catch {
      return [[Number.NaN, Number.NaN]];
    }
    return starts.map((start, i) => [start, ends[i] as number]);
  }
  const assigner = spec.createAssigner();
  try {
    assigner.open(time);
  } catch {
    return [[Number.NaN, Number.NaN]];
  }
  return [[assigner.start, assigner.end]];
}

/** A key the job's `.key()` refuses (a 'key' dead letter). */
const NO_KEY = null as unknown as string;

interface Message {
  readonly key: string;
  readonly t: number;
  readonly v: number;
  readonly edge: boolean;
}

/** Messages of keys a and b around 2024, with edge times (of keys x and a) among them. */
function streamOf(kind: Kind) {
  const near = fc.integer({ min: 0, max: 3 * kind.scale + 2 });
  // Where a window the watermark closes stops being closable: a grace and disorder before LIMIT.
  const closeEdge = LIMIT - (kind.watermark?.closedAfter ?? 0);
  const edgeTime = fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .tuple(fc.integer({ min: 0, max: kind.scale }), fc.integer({ min: -2, max: 2 }))
        .map(([delta, d]) => closeEdge - delta + d),
    },
    fc.constantFrom(LIMIT, -LIMIT, LIMIT - 1, -LIMIT + 1),
    // Anywhere: date-fns cannot place some zones' days tens of thousands of years away.
    fc.integer({ min: -LIMIT, max: LIMIT }),
    fc.tuple(fc.boolean(), near).map(([top, delta]) => (top ? LIMIT - delta : -LIMIT + delta)),
    fc
      .tuple(fc.boolean(), fc.integer({ min: 0, max: 40 * DAY }))
      .map(([top, delta]) => (top ? LIMIT - delta : -LIMIT + delta)),
    // Across where the engine stops checking window by window (windows reach < 1.1e14 ms).
    fc
      .tuple(fc.boolean(), fc.integer({ min: 0, max: 2e14 }))
      .map(([top, delta]) => (top ? LIMIT - delta : -LIMIT + delta)),
  );
  const normal = fc.record({
    key: fc.constantFrom('a', 'b'),
    t: fc.integer({ min: T0, max: T0 + 4 * Math.min(kind.scale, 40 * DAY) }),
  });
  const edge = fc.record({ key: fc.constantFrom('x', 'a'), t: edgeTime });
  return fc
    .tuple(
      fc.array(normal, { minLength: 4, maxLength: 14 }),
      fc.array(fc.tuple(edge, fc.nat()), { minLength: 1, maxLength: 4 }),
    )
    .map(([normals, edges]) => {
      const messages: Omit<Message, 'v'>[] = normals.map((m) => ({ ...m, edge: false }));
      for (const [m, at] of edges)
        messages.splice(at % (messages.length + 1), 0, { ...m, edge: true });
      return messages.map((m, v): Message => ({ ...m, v }));
    });
}

async function run(kind: Kind, messages: readonly Message[]): Promise<DecodedResult[]> {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  for (let i = 0; i < messages.length; i += 3) {
    broker.append(
      'source',
      messages.slice(i, i + 3).map((m) => jsonMessage(m)),
    );
  }
  const job = aggregate<Message>(broker.source('source'))
    .eventTime((m) => m.t)
    .key((m) => m.key)
    .window(kind.spec);
  await (
    kind.watermark === undefined ? job : job.maxOutOfOrderness(kind.watermark.maxOutOfOrderness)
  )
    .onError('dead-letter')
    .aggregate({
      init: () => 0,
      add: (sum: number, m) => sum + m.v,
      result: (sum) => sum,
      merge: (first, second) => first + second,
    })
    // Open windows are published when caught up, so every window and dead letter is seen.
    .to(broker.target('target', { producer: 'p' }), { flush: { caughtUp: true } })
    .run({ untilCaughtUp: true });
  return broker.messages('target').map((m) => decodeResult(m.bytes));
}

const outputsOf = (results: readonly DecodedResult[]) =>
  results.flatMap((r) =>
    r.outputs.map(({ key, start, end, count: n, value, final }) => ({
      key,
      start,
      end,
      count: n,
      value,
      final,
    })),
  );

describe('event times at the edges of the range', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it(
    'never put a non-finite or out-of-range bound into window state, and leave the other windows as without them',
    async () => {
      const coverage = new Coverage('event times at the edges of the range');
      const created: [number, number][] = [];
      // eslint-disable-next-line @typescript-eslint/unbound-method -- called with .call on its instance
      const create = KeyedWindows.prototype.create;
      vi.spyOn(KeyedWindows.prototype, 'create').mockImplementation(function (
        this: KeyedWindows<unknown>,
        ...args: Parameters<typeof create>
      ) {
        created.push([args[1], args[2]]);
        return create.apply(this, args);
      });
      await fc.assert(
        fc.asyncProperty(
          kinds.chain((kind) => fc.tuple(fc.constant(kind), streamOf(kind))),
          async ([kind, messages]) => {
            coverage.run();
            coverage.count(kind.family);
            created.length = 0;
            const results = await run(kind, messages);

            // Which edge messages have a window that cannot be represented: by the kind's
            // geometry, written here (or, for calendar sizes, by its own assigner).
            const windowsOf = (m: Message) =>
              kind.windowsOf?.(m.t) ?? assignerWindows(kind.spec, m.t);
            const refused = messages.filter(
              (m) => !windowsOf(m).every((w) => representable(w) && closable(kind, w)),
            );
            expect(refused.every((m) => m.edge)).toBe(true);
            const deadLetters = results.flatMap((r) => r.deadLetters);
            expect(deadLetters.map((d) => [Number(d.offset), d.stage])).toEqual(
              refused.map((m) => [m.v, 'event-time']),
            );
            coverage.count('runs refusing an edge time', refused.length > 0);
            coverage.add('edge times refused', refused.length);
            coverage.count(
              'runs refusing a time only as its window could never close',
              refused.some((m) => windowsOf(m).every(representable)),
            );
            const acceptedEdges = messages.filter((m) => m.edge && !refused.includes(m));
            coverage.count(
              'runs accepting a time within 3 windows of an edge',
              acceptedEdges.some((m) => LIMIT - Math.abs(m.t) <= 3 * kind.scale + 2),
            );

            // No window state and no published bound outside the range.
            const bounds: [number, number][] = [
              ...created,
              ...outputsOf(results).map((o): [number, number] => [o.start, o.end]),
              ...results
                .filter((r) => r.windowStart !== undefined)
                .map((r): [number, number] => [r.windowStart as number, r.windowEnd as number]),
            ];
            expect(bounds.filter((b) => !representable(b))).toEqual([]);

            // The rest of the stream gives what it gives when the refused messages are refused
            // for another cause (a key that is no key): a dead letter moves no watermark and
            // joins no window, but is one of a step count window's n messages.
            const reference = await run(
              kind,
              messages.map((m) => (refused.includes(m) ? { ...m, t: T0, key: NO_KEY } : m)),
            );
            expect(outputsOf(results)).toEqual(outputsOf(reference));
            expect(
              reference.flatMap((r) => r.deadLetters.map((d) => [Number(d.offset), d.stage])),
            ).toEqual(refused.map((m) => [m.v, 'key']));
          },
        ),
        { ...propertyParameters() },
      );
      // Each kind family is a tenth of the runs (hopping a fifth).
      coverage.expectRates({
        'runs refusing an edge time': 0.3,
        'runs accepting a time within 3 windows of an edge': 0.4,
        'edge times refused': 0.4,
        'runs refusing a time only as its window could never close': 0.1,
        'step tumbling fixed': 0.07,
        'tumbling fixed': 0.07,
        'step tumbling calendar': 0.07,
        'tumbling calendar': 0.07,
        hopping: 0.15,
        'step session': 0.07,
        session: 0.07,
        'step count': 0.07,
        'count per key': 0.07,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
