// Random out-of-order keyed streams and event-time windows for the property tests of issue 12.
// Every draw is independent of the others (no fc.chain), so that a failing case shrinks well:
// the run's settings scale each message's raw draws in a final map.
import fc from 'fast-check';
import type {
  ReferenceConfig,
  ReferenceMessage,
  ReferenceWindow,
} from '../models/event-time-reference.js';

/** A stream and the job settings to run it with. */
export interface EventTimeCase {
  messages: ReferenceMessage[];
  config: ReferenceConfig;
  /**
   * 'bounded': every time is at most maxOutOfOrderness behind the latest before it, so nothing
   * is ever late; 'unbounded': besides, 8% of the messages lie 1..200 ms further behind.
   */
  disorder: 'bounded' | 'unbounded';
}

/** How many messages a case has: set by each property, e.g. fewer against RabbitMQ. */
export interface EventTimeSizes {
  minMessages: number;
  maxMessages: number;
  /** The most keys a case has (default 6): many keys keep many windows open at once. */
  maxKeys?: number;
}

/** Base time of the first message: far-back times stay positive. */
const FIRST_TIME = 1_000;
/** The most a far-back message lies behind the watermark. */
const MAX_FAR_BACK = 200;
/** Percent of the messages of an 'unbounded' run that fall far back. */
const FAR_BACK_PERCENT = 8;

/**
 * Windows of a few to a few dozen ms over a stream whose base time advances 0..6 ms a
 * message: each window holds several messages of several keys, and closes in the run.
 */
const windowArb: fc.Arbitrary<ReferenceWindow> = fc.oneof(
  fc.record({
    type: fc.constant('tumbling' as const),
    size: fc.integer({ min: 1, max: 40 }),
    grace: fc.integer({ min: 0, max: 30 }),
  }),
  fc
    .record({
      advance: fc.integer({ min: 1, max: 15 }),
      windowsPerTime: fc.integer({ min: 1, max: 4 }),
      // Half the runs: every time in the same number of windows (an advance of 1 always is).
      divides: fc.boolean(),
      remainder: fc.nat({ max: 13 }),
      grace: fc.integer({ min: 0, max: 30 }),
    })
    .map(({ advance, windowsPerTime, divides, remainder, grace }) => ({
      type: 'hopping' as const,
      size:
        advance * windowsPerTime + (divides || advance === 1 ? 0 : 1 + (remainder % (advance - 1))),
      advance,
      grace,
    })),
  fc.record({
    type: fc.constant('session' as const),
    gap: fc.integer({ min: 1, max: 20 }),
    grace: fc.integer({ min: 0, max: 30 }),
  }),
  fc.record({ type: fc.constant('count' as const), n: fc.integer({ min: 1, max: 8 }) }),
);

/** One message's draws, scaled by the run's settings. */
const rawMessageArb = (maxKeys: number) =>
  fc.record({
    step: fc.integer({ min: 0, max: 6 }),
    keyDraw: fc.nat({ max: maxKeys - 1 }),
    /** Fraction (per mille) of maxOutOfOrderness this time lies behind the base time. */
    jitter: fc.integer({ min: 0, max: 1000 }),
    farBackRoll: fc.integer({ min: 0, max: 99 }),
    farBack: fc.integer({ min: 1, max: MAX_FAR_BACK }),
    filterRoll: fc.integer({ min: 0, max: 99 }),
  });

/**
 * Random cases: 1..maxKeys keys (6 by default), maxOutOfOrderness 0..20 (0 in a quarter of the runs), every window
 * kind, 'drop' or 'side', filtered messages in two thirds of the runs. Values are offset + 1:
 * distinct, so that a late value names its message.
 */
export function eventTimeCaseArbitrary(sizes: EventTimeSizes): fc.Arbitrary<EventTimeCase> {
  return fc
    .record({
      window: windowArb,
      maxOutOfOrderness: fc.oneof(
        { arbitrary: fc.constant(0), weight: 1 },
        { arbitrary: fc.integer({ min: 1, max: 20 }), weight: 3 },
      ),
      late: fc.constantFrom('drop' as const, 'side' as const),
      disorder: fc.constantFrom('bounded' as const, 'unbounded' as const),
      keys: fc.integer({ min: 1, max: sizes.maxKeys ?? 6 }),
      filterPercent: fc.constantFrom(0, 5, 15),
      raw: fc.array(rawMessageArb(sizes.maxKeys ?? 6), {
        minLength: sizes.minMessages,
        maxLength: sizes.maxMessages,
        size: 'max',
      }),
    })
    .map(({ window, maxOutOfOrderness, late, disorder, keys, filterPercent, raw }) => {
      let base = FIRST_TIME;
      const messages = raw.map((r, offset): ReferenceMessage => {
        base += r.step;
        // Behind the base by at most maxOutOfOrderness: never behind the watermark.
        let time = base - Math.floor((r.jitter * maxOutOfOrderness) / 1000);
        if (disorder === 'unbounded' && r.farBackRoll < FAR_BACK_PERCENT) {
          time = base - maxOutOfOrderness - r.farBack;
        }
        const message = { offset, key: `k${r.keyDraw % keys}`, time, value: offset + 1 };
        return r.filterRoll < filterPercent ? { ...message, filtered: true } : message;
      });
      return { messages, config: { window, maxOutOfOrderness, late }, disorder };
    });
}
