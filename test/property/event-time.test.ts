import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import { decodeResult, type EarlyUpdates, type PackMode } from '../../src/index.js';
import { crashArb, runThroughCrashes } from '../support/arbitraries/crashes.js';
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
  type ReferenceWindow,
} from '../support/models/event-time-reference.js';
import {
  asReferenceResults,
  caseJob,
  caseMessages,
  sumOfValues,
} from '../support/jobs/event-time-job.js';
import { targetBytes } from '../support/arbitraries/memory-scenario.js';
import { expectStepsTile } from '../support/results/target-stream.js';

// Hundreds of messages, so that windows stay open across many results and crashes land deep.
const cases = eventTimeCaseArbitrary({ minMessages: 20, maxMessages: 300 });
// Dozens of keys: many windows open at once, so the windows' state grows and reuses its slots.
const manyKeyCases = eventTimeCaseArbitrary({ minMessages: 200, maxMessages: 400, maxKeys: 80 });
// Early updates publish up to one result per message: fewer messages keep the crash runs quick.
const smallCases = eventTimeCaseArbitrary({ minMessages: 20, maxMessages: 120 });
const packs = fc.constantFrom<PackMode>('sections', 'batch', 'single');

function brokerWith(messages: Uint8Array[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  // Chunks of a few messages, as a broker batches them: a crash may fall inside one.
  for (let i = 0; i < messages.length; i += 7) broker.append('source', messages.slice(i, i + 7));
  return broker;
}

function run(broker: MemoryBroker, c: EventTimeCase, pack: PackMode, early?: EarlyUpdates) {
  return caseJob(
    c.config,
    broker.source('source'),
    broker.target('target', { producer: 'job-1' }),
    sumOfValues,
    { pack, early },
  );
}

const earlyUpdates = fc.oneof(
  fc.constant<EarlyUpdates>('each-result'),
  fc.integer({ min: 1, max: 4 }).map<EarlyUpdates>((every) => ({ every })),
);

describe('event-time windows on the embedded broker', () => {
  it(
    'publishes exactly what the naive reference model of watermark, grace and merging decides',
    async () => {
      const coverage = new Coverage('event-time windows against the reference model');
      await fc.assert(
        fc.asyncProperty(cases, packs, async (c, pack) => {
          coverage.run();
          const reference = referenceRunDetailed(c.messages, c.config);
          countEventTimeCoverage(coverage, c, reference);
          const broker = brokerWith(caseMessages(c.messages));
          await run(broker, c, pack).run({ untilCaughtUp: true });
          expect(asReferenceResults(targetBytes(broker))).toEqual(reference.results);
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 3 results': 0.75,
        'runs with late messages': 0.25,
        'runs with a session merge': 0.06,
        'session merges': 0.25,
        'runs with windows closing together': 0.45,
        'runs with out-of-order messages': 0.7,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'publishes exactly what the reference model decides with dozens of keys open at once',
    async () => {
      const coverage = new Coverage('event-time windows of many keys against the reference model');
      await fc.assert(
        fc.asyncProperty(manyKeyCases, packs, async (c, pack) => {
          coverage.run();
          const reference = referenceRunDetailed(c.messages, c.config);
          countEventTimeCoverage(coverage, c, reference);
          coverage.count('runs ending with > 16 windows open', reference.open.length > 16);
          coverage.count(
            'runs closing > 50 windows',
            reference.results.reduce((n, r) => n + r.outputs.length, 0) > 50,
          );
          const broker = brokerWith(caseMessages(c.messages));
          await run(broker, c, pack).run({ untilCaughtUp: true });
          expect(asReferenceResults(targetBytes(broker))).toEqual(reference.results);
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 3 results': 0.9,
        'runs ending with > 16 windows open': 0.2,
        'runs closing > 50 windows': 0.75,
        'runs with windows closing together': 0.65,
        'runs with a session merge': 0.03,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'writes a byte-identical target after any number of crashes and restarts, re-reading open windows from the recorded offset',
    async () => {
      const coverage = new Coverage('event-time windows through crashes');
      await fc.assert(
        fc.asyncProperty(cases, packs, crashArb, async (c, pack, crashes) => {
          coverage.run();
          const messages = caseMessages(c.messages);
          const expected = brokerWith(messages);
          await run(expected, c, pack).run({ untilCaughtUp: true });
          const results = asReferenceResults(targetBytes(expected));
          coverage.count('runs with >= 3 results', results.length >= 3);
          coverage.count(
            'runs whose results re-read before their own offsets',
            targetBytes(expected).some((bytes) => {
              const { recovery, lastOffset } = decodeRecovery(bytes);
              return recovery !== undefined && recovery < lastOffset;
            }),
          );
          const broker = brokerWith(messages);
          await runThroughCrashes(broker, 'target', crashes, () => run(broker, c, pack), coverage);
          expect(targetBytes(broker)).toEqual(targetBytes(expected));
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 3 results': 0.8,
        'runs whose results re-read before their own offsets': 0.75,
        'crashes fired': 1.5,
        'crashes after a stored result': 1.5,
        'before-publish fired': 0.3,
        'after-publish fired': 0.3,
        'after-confirm fired': 0.3,
        'lose-confirm fired': 0.3,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "publishes each window's early updates before its final output, the same final outputs, and the same bytes through crashes",
    async () => {
      const coverage = new Coverage('early updates of event-time windows');
      await fc.assert(
        fc.asyncProperty(
          smallCases,
          packs,
          earlyUpdates,
          crashArb,
          async (c, pack, early, crashes) => {
            coverage.run();
            const reference = referenceRunDetailed(c.messages, c.config);
            const messages = caseMessages(c.messages);
            const expected = brokerWith(messages);
            await run(expected, c, pack, early).run({ untilCaughtUp: true });
            const updates: (ReferenceOutput & { decision: number })[] = [];
            const finals = asReferenceResults(targetBytes(expected), updates).flatMap((r) =>
              r.outputs.map((o) => ({ ...o, decision: r.decision })),
            );
            expect(finals.map(({ decision: _, ...o }) => o)).toEqual(
              reference.results.flatMap((r) => r.outputs),
            );
            coverage.count('runs with early updates', updates.length > 0);
            coverage.count(
              `${early === 'each-result' ? early : 'every n'} runs with early updates`,
              updates.length > 0,
            );
            for (const update of updates) {
              // A window's final output comes after each of its early updates, and holds more;
              // a window the run left open (the model's too) has none.
              const final = finalOf(c.config.window, update, finals);
              if (final === undefined) {
                const open = openWindowOf(c.config.window, update, reference.open);
                expect(open, 'an early update of a window neither closed nor open').toBeDefined();
                expect(open?.count).toBeGreaterThanOrEqual(update.count);
              } else {
                expect(final.decision).toBeGreaterThan(update.decision);
                expect(final.count).toBeGreaterThanOrEqual(update.count);
              }
              coverage.count('early updates followed by their final', final !== undefined);
              coverage.count('early updates of windows left open', final === undefined);
              if (typeof early === 'object' && c.config.window.type !== 'session') {
                expect(update.count % early.every).toBe(0);
              }
            }
            const broker = brokerWith(messages);
            await runThroughCrashes(
              broker,
              'target',
              crashes,
              () => run(broker, c, pack, early),
              coverage,
            );
            expect(targetBytes(broker)).toEqual(targetBytes(expected));
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with early updates': 0.75,
        'each-result runs with early updates': 0.25,
        'every n runs with early updates': 0.35,
        'early updates followed by their final': 10,
        'early updates of windows left open': 2,
        'crashes after a stored result': 1.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'counts every message once through flushes at the end of runs, gives the same bytes through crashes, and combines flushed and continued windows to the unflushed ones',
    async () => {
      const coverage = new Coverage('flushing event-time windows');
      // Where runs end, as shares of the source: each run but the last flushes at its end.
      const cutsArb = fc.uniqueArray(fc.integer({ min: 1, max: 99 }), {
        minLength: 1,
        maxLength: 4,
        size: 'max',
      });
      await fc.assert(
        fc.asyncProperty(smallCases, packs, cutsArb, crashArb, async (c, pack, cuts, crashes) => {
          coverage.run();
          const messages = caseMessages(c.messages);
          const prefixes = [
            ...new Set(cuts.map((share) => Math.floor((share * messages.length) / 100))),
          ]
            .filter((end) => end > 0)
            .sort((a, b) => a - b);
          const flushEach = async (broker: MemoryBroker, withCrashes: boolean) => {
            broker.createStream('source');
            broker.createStream('target');
            let appended = 0;
            for (const end of [...prefixes, messages.length]) {
              broker.append('source', messages.slice(appended, end));
              appended = end;
              const flushing = () =>
                caseJob(
                  c.config,
                  broker.source('source'),
                  broker.target('target', { producer: 'job-1' }),
                  sumOfValues,
                  { pack, flush: end < messages.length ? { caughtUp: true } : undefined },
                );
              if (withCrashes)
                await runThroughCrashes(broker, 'target', crashes, flushing, coverage);
              else await flushing().run({ untilCaughtUp: true });
            }
          };
          const expected = new MemoryBroker({ now: () => 0 });
          await flushEach(expected, false);
          const stored = targetBytes(expected).map((bytes) => decodeResult<number>(bytes));
          coverage.count(
            'runs with a flushed result',
            stored.some((r) => r.flushed),
          );
          coverage.count(
            'runs with a continued window',
            stored.some((r) => r.outputs.some((o) => o.continues)),
          );
          // Every message up to the last result is in exactly one result's range.
          const heads = stored.filter((r) => r.part === undefined || r.part.index === 0);
          expectStepsTile(heads);
          if (c.config.window.type === 'tumbling' || c.config.window.type === 'hopping') {
            // Flushed and continued outputs of a window add up to the window without flushes.
            const reference = referenceRunDetailed(c.messages, c.config);
            const combined = new Map<string, { count: number; sum: number }>();
            for (const o of stored.flatMap((r) => r.outputs)) {
              const id = `${String(o.key)} ${o.start} ${o.end}`;
              const into = combined.get(id) ?? { count: 0, sum: 0 };
              combined.set(id, { count: into.count + o.count, sum: into.sum + o.value });
            }
            for (const o of reference.results.flatMap((r) => r.outputs)) {
              expect(combined.get(`${o.key} ${o.start} ${o.end}`)).toEqual({
                count: o.count,
                sum: o.sum,
              });
            }
          }
          const broker = new MemoryBroker({ now: () => 0 });
          await flushEach(broker, true);
          expect(targetBytes(broker)).toEqual(targetBytes(expected));
        }),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with a flushed result': 0.75,
        'runs with a continued window': 0.3,
        'crashes after a stored result': 1.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});

function decodeRecovery(bytes: Uint8Array): { recovery: bigint | undefined; lastOffset: bigint } {
  const result = decodeResult(bytes);
  return { recovery: result.recovery?.offset, lastOffset: result.lastOffset };
}

type Decided = ReferenceOutput & { decision: number };

/**
 * The final output of the window `update` updated early, if it closed: for tumbling and
 * hopping windows the one of its key, start and end (a message for a closed one is late, so
 * it never reopens); for sessions the one of its key that holds its range (the session it
 * grew into: a session opened after one closed ends past it); for count windows the next to
 * close of its key (one is open per key at a time). Each of these must close after the update.
 */
function finalOf(
  window: ReferenceWindow,
  update: Decided,
  finals: readonly Decided[],
): Decided | undefined {
  const ofKey = finals.filter((o) => o.key === update.key);
  if (window.type === 'count') {
    const final = ofKey.find((o) => o.decision > update.decision);
    if (final !== undefined) {
      expect(holds(final, update)).toBe(true);
      expect([final.count, update.count < window.n]).toEqual([window.n, true]);
    }
    return final;
  }
  if (window.type === 'session') return ofKey.find((o) => holds(o, update));
  const same = ofKey.filter((o) => o.start === update.start && o.end === update.end);
  expect(same.length).toBeLessThanOrEqual(1);
  return same[0];
}

/** The window of `update` among those the model left open after the last message. */
function openWindowOf(
  window: ReferenceWindow,
  update: Decided,
  open: readonly ReferenceOutput[],
): ReferenceOutput | undefined {
  return open.find(
    (o) =>
      o.key === update.key &&
      (window.type === 'tumbling' || window.type === 'hopping'
        ? o.start === update.start && o.end === update.end
        : holds(o, update)),
  );
}

/** Whether `outer`'s range holds `inner`'s. */
function holds(outer: ReferenceOutput, inner: ReferenceOutput): boolean {
  return outer.start <= inner.start && inner.end <= outer.end;
}
