// Filter, map, transform and user encoders keep the runner's guarantee: under random crashes
// the target is byte-identical to the uninterrupted run's, publishing ids strictly increase,
// and every source message is counted once (aggregated, late, dropped, dead-lettered or
// filtered) — in the user's own format.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  type PipelineBuilder,
  type RunOptions,
  type StepResult,
} from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { crashArb, runThroughCrashes, type Crash } from '../support/crashes.js';
import { userWrites } from '../support/memory-job.js';
import { brokerWith, targetBytes } from '../support/memory-scenario.js';
import { buildJob, jobArb, sourceArb, type Event, type SourceSpec } from '../support/scenario.js';
import { expectStrictlyIncreasing } from '../support/target-stream.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

/**
 * Runs `job` on the scenario's broker through `crashes` (test/support/crashes.ts) and checks
 * what both properties ask first: the target is the uninterrupted run's, byte for byte, and
 * its publishing ids strictly increase. Returns that broker and how many runs crashed.
 */
async function throughCrashes(
  source: SourceSpec,
  crashes: readonly Crash[],
  job: (broker: MemoryBroker) => { run(options: RunOptions): Promise<unknown> },
): Promise<{ broker: MemoryBroker; crashed: number }> {
  const expected = brokerWith(source);
  await job(expected).run({ untilCaughtUp: true });
  const broker = brokerWith(source);
  const crashed = await runThroughCrashes(broker, 'target', crashes, () => job(broker));
  expect(targetBytes(broker)).toEqual(targetBytes(expected));
  expectStrictlyIncreasing(broker.chunks('target').map((c) => c.writer?.publishingId ?? -1n));
  return { broker, crashed };
}
const bytes = (text: string) => Buffer.from(text, 'utf8');

/** The events of a source in offset order (a scenario without garbage has one per offset). */
const eventsOf = (source: SourceSpec): Event[] =>
  source.chunks.flatMap((c) => c.entries.flatMap((e) => ('event' in e ? [e.event] : [])));

/** A redaction: the value's sign only, and in 'batch' mode a second body with the key alone. */
function redact(batch: boolean) {
  return (e: Event) => {
    const redacted = bytes(JSON.stringify({ key: e.key, t: e.t, sign: Math.sign(e.value) }));
    return batch ? [redacted, bytes(e.key)] : redacted;
  };
}

/** A user envelope that shows where each message of the step went. */
function envelope(result: StepResult<unknown>): Uint8Array {
  return bytes(
    JSON.stringify({
      first: String(result.firstOffset),
      last: String(result.lastOffset),
      messages: result.messages,
      window: result.window,
      outputs: result.outputs.map((o) => [o.key, o.count, o.value]),
      late: result.late.length,
      lateDropped: result.lateDropped,
      filtered: result.filtered,
      dead: result.deadLetters.map((d) => d.stage),
    }),
  );
}

interface Envelope {
  first: string;
  last: string;
  messages: number;
  outputs: [unknown, number, unknown][];
  late: number;
  lateDropped: number;
  filtered: number;
  dead: string[];
}

const transformArb = fc.record({
  modulo: fc.integer({ min: 2, max: 5 }),
  batch: fc.boolean(),
});

const loopsArb = fc.record({
  modulo: fc.integer({ min: 2, max: 5 }),
  /** A value divisible by this makes the filter throw: a 'filter' dead letter. */
  unlucky: fc.integer({ min: 7, max: 40 }),
  scale: fc.integer({ min: -3, max: 3 }),
});

describe('user-format jobs under crashes on the embedded broker', () => {
  it('should write byte-identical transform targets with one message per passing source message', async () => {
    // Runs with a crash, with filtered messages, with batches of bodies.
    const seen = { runs: 0, crashed: 0, filtered: 0, batches: 0 };
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: false, minLength: 20 }),
        transformArb,
        crashArb,
        async (source, { modulo, batch }, crashes) => {
          const job = (broker: MemoryBroker) =>
            aggregate<Event>(broker.source('source'))
              .filter((e) => e.value % modulo !== 0)
              .transform(redact(batch))
              .to(broker.target('target', { producer: 'redactor' }), { retryDelayMs: 0 });

          const { broker, crashed } = await throughCrashes(source, crashes, job);
          // Each message that passes is one write, under its own offset, holding its own bodies.
          const events = eventsOf(source);
          const passing = events.flatMap((e, offset) => (e.value % modulo !== 0 ? [offset] : []));
          const writes = userWrites(broker);
          expect(writes.map((w) => w.publishingId)).toEqual(passing.map(BigInt));
          expect(writes.map((w) => w.bodies)).toEqual(
            passing.map((offset) => {
              const e = events[offset] as Event;
              const body = JSON.stringify({ key: e.key, t: e.t, sign: Math.sign(e.value) });
              return batch ? [body, e.key] : [body];
            }),
          );

          seen.runs++;
          if (crashed > 0) seen.crashed++;
          if (passing.length < events.length && passing.length > 0) seen.filtered++;
          if (batch && writes.length > 0) seen.batches++;
        },
      ),
      { numRuns: RUNS },
    );
    // Coverage floors: the property was exercised where it matters, not vacuously.
    expect(seen.runs).toBe(RUNS);
    expect(seen.crashed).toBeGreaterThanOrEqual(RUNS * 0.4);
    expect(seen.filtered).toBeGreaterThanOrEqual(RUNS * 0.8);
    expect(seen.batches).toBeGreaterThanOrEqual(RUNS * 0.3);
  });

  it('should write byte-identical filtered, mapped windowed targets that count every message once', async () => {
    const seen = {
      runs: 0,
      crashed: 0,
      steps: 0,
      filteredSteps: 0,
      filterDeadSteps: 0,
      decodeDeadSteps: 0,
    };
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: true, minLength: 20 }),
        jobArb({ deadLetter: true }),
        loopsArb,
        crashArb,
        async (source, spec, { modulo, unlucky, scale }, crashes) => {
          const prepare = (pipeline: PipelineBuilder<Event>) =>
            pipeline
              .filter((e) => {
                if (e.value % unlucky === 0) throw new Error(`unlucky ${e.value}`);
                return e.value % modulo !== 0;
              })
              .map((e) => ({ ...e, value: e.value * scale }));
          const job = (broker: MemoryBroker) =>
            buildJob(spec, broker.source('source'), broker.target('target', { producer: 'p' }), {
              prepare,
              encode: envelope,
            });

          const { broker, crashed } = await throughCrashes(source, crashes, job);
          // Steps tile the offsets from 0, and each message of a step went one way only.
          const writes = userWrites(broker);
          let next = 0n;
          for (const write of writes) {
            expect(write.bodies).toHaveLength(1);
            const step = JSON.parse(write.bodies[0] as string) as Envelope;
            expect(BigInt(step.first)).toBe(next);
            expect(write.publishingId).toBe(BigInt(step.last));
            expect(step.messages).toBe(Number(BigInt(step.last) - BigInt(step.first) + 1n));
            const aggregated = step.outputs.reduce((n, [, count]) => n + count, 0);
            expect(
              aggregated + step.late + step.lateDropped + step.filtered + step.dead.length,
            ).toBe(step.messages);
            next = BigInt(step.last) + 1n;

            if (step.filtered > 0) seen.filteredSteps++;
            if (step.dead.includes('filter')) seen.filterDeadSteps++;
            if (step.dead.includes('decode')) seen.decodeDeadSteps++;
          }
          seen.runs++;
          seen.steps += writes.length;
          if (crashed > 0) seen.crashed++;
        },
      ),
      { numRuns: RUNS },
    );
    expect(seen.runs).toBe(RUNS);
    expect(seen.crashed).toBeGreaterThanOrEqual(RUNS * 0.25);
    expect(seen.steps).toBeGreaterThanOrEqual(RUNS * 3);
    expect(seen.filteredSteps).toBeGreaterThanOrEqual(RUNS);
    expect(seen.filterDeadSteps).toBeGreaterThanOrEqual(RUNS * 0.5);
    expect(seen.decodeDeadSteps).toBeGreaterThanOrEqual(RUNS * 0.5);
  });
});
