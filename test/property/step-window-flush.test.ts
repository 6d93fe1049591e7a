// Quiet-source flushes of step windows give up byte-identical replay, never effectively-once:
// the source is appended batch by batch, each batch followed by an untilCaughtUp run that
// flushes when caught up (so flushes fall at random points), some runs crashing first. Every
// source message lands in exactly one published result; a step marked as continuing comes
// right after the flushed result it continues; and on in-order data the flushed results and
// their continuations add up, window by window, to what a run without flushes publishes.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import { lastWriteId, type DecodedResult, type ResultOutput } from '../../src/index.js';
import { faultPointArb, runCrashing } from '../support/arbitraries/crashes.js';
import { brokerWith, targetBytes } from '../support/arbitraries/memory-scenario.js';
import {
  buildJob,
  encodeSource,
  jobArb,
  sourceArb,
  type JobSpec,
  type SourceSpec,
} from '../support/arbitraries/scenario.js';
import {
  Coverage,
  PROPERTY_TIMEOUT_MS,
  propertyParameters,
} from '../support/arbitraries/coverage.js';
import {
  expectEveryMessageCountedOnce,
  expectStrictlyIncreasing,
  stepsOf,
} from '../support/results/target-stream.js';

const FLUSH = { flush: { caughtUp: true } } as const;

/** Where the source is cut into batches, each appended before one flushing run. */
const scheduleArb = fc.array(
  fc.record({
    /** Chunks appended before this run. */
    chunks: fc.integer({ min: 1, max: 3 }),
    /**
     * A run that crashes first, at this publish and point, before the clean one. A run of few
     * chunks publishes few results, its flushed one last: early publishes often hit it.
     */
    crash: fc.option(
      fc.record({ atPublish: fc.integer({ min: 1, max: 3 }), point: faultPointArb }),
      { freq: 2 },
    ),
  }),
  { minLength: 2, maxLength: 12, size: 'max' },
);

type Schedule = (typeof scheduleArb extends fc.Arbitrary<infer S> ? S : never)[number][];

const job = (broker: MemoryBroker, spec: JobSpec) =>
  buildJob(spec, broker.source('source'), broker.target('target', { producer: 'job-1' }), FLUSH);

/**
 * Appends the source batch by batch, each followed by a flushing run (after a crashing one
 * where the schedule says), and a last run for the chunks the schedule did not reach.
 */
async function runSchedule(
  source: SourceSpec,
  spec: JobSpec,
  schedule: Schedule,
  coverage: Coverage,
): Promise<MemoryBroker> {
  const broker = brokerWith({ chunks: [] });
  const chunks = encodeSource(source);
  let appended = 0;
  const crashes: { step: number; point: string }[] = [];
  for (const run of [...schedule, { chunks: chunks.length, crash: null }]) {
    for (const chunk of chunks.slice(appended, appended + run.chunks)) {
      if (chunk.messages.length > 0) {
        broker.append('source', chunk.messages, { timestamp: chunk.timestamp });
      }
    }
    appended = Math.min(chunks.length, appended + run.chunks);
    if (run.crash !== null) {
      const { point } = run.crash;
      await runCrashing(
        broker,
        {
          stream: 'target',
          ...run.crash,
          // The step being published: the same one the clean run publishes there next.
          onFire: () => crashes.push({ step: stepsOf(targetBytes(broker)).length, point }),
        },
        job(broker, spec),
      );
    }
    await job(broker, spec).run({ untilCaughtUp: true });
  }
  const steps = stepsOf(targetBytes(broker)).map((parts) => parts[0] as DecodedResult);
  const atFlushed = crashes.filter((crash) => steps[crash.step]?.flushed === true);
  // Counted once a run: a run rarely has two, and a label counted twice in some run gets a
  // variance of twice its mean, which leaves a rare label a floor of 0.
  coverage.count(
    'runs with a crash right before a flushed result',
    atFlushed.some((crash) => crash.point === 'before-publish'),
  );
  coverage.add(
    'crashes right after a flushed result',
    atFlushed.filter((crash) => crash.point !== 'before-publish').length,
  );
  return broker;
}

/** Whether the step (all its parts) continues a flushed window; its outputs agree on it. */
function continues(parts: readonly DecodedResult[]): boolean {
  const marks = new Set(parts.flatMap((p) => p.outputs.map((o) => o.continues)));
  expect(marks.size).toBeLessThanOrEqual(1);
  return marks.has(true);
}

async function checkEveryMessageOnce(
  broker: MemoryBroker,
  source: SourceSpec,
  coverage: Coverage,
): Promise<DecodedResult[][]> {
  const steps = stepsOf(targetBytes(broker));
  expectEveryMessageCountedOnce(steps);
  expectStrictlyIncreasing(broker.chunks('target').map((c) => c.writer?.publishingId ?? -1n));
  // The last run flushed: every message is in a result, the last one's id is the last write
  // of the step ending at the last offset.
  const total = source.chunks.reduce((n, c) => n + c.entries.length, 0);
  expect(steps.reduce((n, parts) => n + (parts[0]?.messages ?? 0), 0)).toBe(total);
  const last = await broker.target('target', { producer: 'job-1' }).lastPublishingId();
  expect(last).toBe(lastWriteId(BigInt(total) - 1n));
  // A continuation comes right after the flushed result it continues.
  steps.forEach((parts, i) => {
    if (continues(parts)) expect(steps[i - 1]?.[0]?.flushed).toBe(true);
  });
  const heads = steps.map((parts) => parts[0] as DecodedResult);
  coverage.count('runs with >= 2 flushed results', heads.filter((h) => h.flushed).length >= 2);
  coverage.count('runs with a continuation', steps.some(continues));
  return steps;
}

/** Per window start and key: sum and count of `outputs` (the scenario's sum, or a compaction's merged value). */
function perWindowAndKey(outputs: readonly ResultOutput[]): Map<string, [number, number]> {
  const totals = new Map<string, [number, number]>();
  for (const output of outputs) {
    const id = `${output.start}/${String(output.key)}`;
    const [sum, count] = totals.get(id) ?? [0, 0];
    const value = output.value as { sum?: number; value?: number };
    totals.set(id, [sum + (value.sum ?? value.value ?? 0), count + output.count]);
  }
  return totals;
}

/** The source with its event times made non-decreasing: nothing late, sessions keep their start. */
const inOrderSourceArb = sourceArb({ garbage: false, minLength: 20, maxLength: 120 }).map(
  (source) => {
    let t = 0;
    return {
      chunks: source.chunks.map((chunk) => ({
        ...chunk,
        entries: chunk.entries.map((entry) => {
          if (!('event' in entry)) return entry;
          t = Math.max(t, entry.event.t);
          return { event: { ...entry.event, t } };
        }),
      })),
    };
  },
);

/** Windows a flush keeps open: their continuations add to the flushed part. */
const continuableJobArb = jobArb({ deadLetter: false }).filter(
  (spec) => spec.window.kind !== 'count' && spec.window.kind !== 'compact-count',
);

// Coverage rates: expected occurrences per run, a little below what 200 runs measure.
describe('quiet-source flushes of step windows on the embedded broker', () => {
  it(
    'lands every source message in exactly one result under random flush and crash schedules',
    async () => {
      const coverage = new Coverage('step flushes and crashes');
      await fc.assert(
        fc.asyncProperty(
          sourceArb({ garbage: true, minLength: 20, maxLength: 120 }),
          jobArb({ deadLetter: true }),
          scheduleArb,
          async (source, spec, schedule) => {
            coverage.run();
            const broker = await runSchedule(source, spec, schedule, coverage);
            await checkEveryMessageOnce(broker, source, coverage);
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 2 flushed results': 0.9,
        'runs with a continuation': 0.6,
        'runs with a crash right before a flushed result': 0.12,
        'crashes right after a flushed result': 0.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'adds each flushed window and its continuations up to the unflushed run’s output, window by window, on in-order data',
    async () => {
      const coverage = new Coverage('step flushes combine');
      await fc.assert(
        fc.asyncProperty(
          inOrderSourceArb,
          continuableJobArb,
          scheduleArb,
          async (source, spec, schedule) => {
            coverage.run();
            const broker = await runSchedule(source, spec, schedule, coverage);
            const steps = await checkEveryMessageOnce(broker, source, coverage);
            // Without a flush the last window stays open: every window it did publish must be
            // what the flushed results and their continuations hold for it together.
            const reference = brokerWith(source);
            await buildJob(
              spec,
              reference.source('source'),
              reference.target('target', { producer: 'job-1' }),
            ).run({ untilCaughtUp: true });
            const expected = perWindowAndKey(
              stepsOf(targetBytes(reference)).flatMap((parts) => parts.flatMap((p) => p.outputs)),
            );
            const actual = perWindowAndKey(
              steps.flatMap((parts) => parts.flatMap((p) => p.outputs)),
            );
            for (const [id, totals] of expected) {
              expect([id, actual.get(id)]).toEqual([id, totals]);
            }
            coverage.count('runs comparing >= 2 windows', expected.size >= 2);
            coverage.count(`${spec.window.kind} continued`, steps.some(continues));
          },
        ),
        propertyParameters(),
      );
      coverage.expectRates({
        'runs with >= 2 flushed results': 0.95,
        'runs with a continuation': 0.9,
        'runs comparing >= 2 windows': 0.95,
        'tumbling continued': 0.18,
        'session continued': 0.18,
        'compact-every continued': 0.18,
        'compact-gap continued': 0.18,
        'runs with a crash right before a flushed result': 0.12,
        'crashes right after a flushed result': 0.35,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
