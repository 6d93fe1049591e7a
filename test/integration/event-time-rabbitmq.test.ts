// Event-time windows (tumbling and hopping with grace, per-key sessions with grace, per-key
// counts) against RabbitMQ, through crashes: random out-of-order streams of 20 to 120
// messages are run on the real broker with jobs killed at random publishes and restarted
// (each restart recovers from the producer's last result, read back from RabbitMQ), and the
// target must equal, byte for byte, the same job's uninterrupted run on the embedded broker.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  hopping,
  jsonMessage,
  PublishError,
  session,
  tumbling,
  count,
  type Aggregator,
  type DecodedResult,
  type LatePolicy,
  type PackMode,
  type SingleFormat,
  type Source,
  type Target,
} from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { Coverage, PROPERTY_TIMEOUT_MS } from '../support/coverage.js';
import { forwarding } from '../support/forwarding-target.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/rabbitmq.js';
import { packings } from '../support/scenario.js';
import { expectStrictlyIncreasing } from '../support/target-stream.js';

const real = rabbitForTests();
const PRODUCER = 'event-time-job';
const RUNS = 20;
const TIME_LIMIT_MS = 150_000;

/** One source message; `v` is its offset + 1, so that each output names its messages. */
interface Reading {
  readonly key: string;
  readonly t: number;
  readonly v: number;
  /** Left out by the job's filter: counted in its result as filtered. */
  readonly skip: boolean;
}

type WindowCase =
  | { readonly type: 'tumbling'; readonly size: number; readonly grace: number }
  | {
      readonly type: 'hopping';
      readonly size: number;
      readonly advance: number;
      readonly grace: number;
    }
  | { readonly type: 'session'; readonly gap: number; readonly grace: number }
  | { readonly type: 'count'; readonly n: number };

interface JobCase {
  readonly window: WindowCase;
  readonly maxOutOfOrderness: number;
  readonly late: LatePolicy;
  readonly pack: PackMode;
  readonly format?: SingleFormat;
}

/**
 * How a run of the job ends early. 'before-send' and 'after-send': the process dies at that
 * publish, before handing it to the broker or just after (it may be stored); 'retriable': the
 * publish fails as a lost connection would, and the job resumes from the broker in the same
 * run; 'abort': the job is stopped by its signal once that publish is confirmed.
 */
type CrashKind = 'before-send' | 'after-send' | 'retriable' | 'abort';

interface Crash {
  /** 1 = the first publish of the run. */
  readonly atPublish: number;
  readonly kind: CrashKind;
}

const windowArb: fc.Arbitrary<WindowCase> = fc.oneof(
  fc.record({
    type: fc.constant('tumbling' as const),
    size: fc.integer({ min: 2, max: 40 }),
    grace: fc.integer({ min: 0, max: 20 }),
  }),
  fc
    .record({
      advance: fc.integer({ min: 2, max: 12 }),
      windowsPerTime: fc.integer({ min: 1, max: 3 }),
      extra: fc.nat({ max: 5 }),
      grace: fc.integer({ min: 0, max: 20 }),
    })
    .map(({ advance, windowsPerTime, extra, grace }) => ({
      type: 'hopping' as const,
      // Not always a multiple of the advance: then times fall in different numbers of windows.
      size: advance * windowsPerTime + (extra % advance),
      advance,
      grace,
    })),
  fc.record({
    type: fc.constant('session' as const),
    gap: fc.integer({ min: 1, max: 15 }),
    grace: fc.integer({ min: 0, max: 20 }),
  }),
  fc.record({ type: fc.constant('count' as const), n: fc.integer({ min: 1, max: 6 }) }),
);

const jobArb: fc.Arbitrary<JobCase> = fc
  .record({
    window: windowArb,
    maxOutOfOrderness: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 20 })),
    late: fc.constantFrom<LatePolicy>('drop', 'side'),
    packing: fc.constantFrom(...packings),
  })
  .map(({ packing, ...job }) => ({ ...job, ...packing }));

/**
 * 20 to 120 messages of 1 to 4 keys. The base time advances 0..6 ms a message; each time is
 * at most `disorder` behind it ('bounded' disorder, within maxOutOfOrderness: never late for
 * lack of it), and with 'unbounded' disorder one message in ten falls up to 150 ms further back.
 */
function readingsArb(
  maxOutOfOrderness: number,
): fc.Arbitrary<{ disorder: 'bounded' | 'unbounded'; readings: Reading[] }> {
  return fc
    .record({
      keys: fc.integer({ min: 1, max: 4 }),
      disorder: fc.constantFrom('bounded' as const, 'unbounded' as const),
      raw: fc.array(
        fc.record({
          step: fc.integer({ min: 0, max: 6 }),
          key: fc.nat({ max: 3 }),
          jitter: fc.integer({ min: 0, max: 1000 }),
          farBack: fc.option(fc.integer({ min: 1, max: 150 }), { freq: 9 }),
          skip: fc.integer({ min: 0, max: 19 }),
        }),
        { minLength: 20, maxLength: 120, size: 'max' },
      ),
    })
    .map(({ keys, disorder, raw }) => {
      let base = 1_000;
      const readings = raw.map((r, offset) => {
        base += r.step;
        let t = base - Math.floor((r.jitter * maxOutOfOrderness) / 1000);
        if (disorder === 'unbounded' && r.farBack !== null) {
          t = base - maxOutOfOrderness - r.farBack;
        }
        return { key: `k${r.key % keys}`, t, v: offset + 1, skip: r.skip === 0 };
      });
      return { disorder, readings };
    });
}

const crashesArb: fc.Arbitrary<Crash[]> = fc.array(
  fc.record({
    atPublish: fc.integer({ min: 1, max: 6 }),
    kind: fc.constantFrom<CrashKind>('before-send', 'after-send', 'retriable', 'abort'),
  }),
  { minLength: 2, maxLength: 6, size: 'max' },
);

/** Each window's values in the order added; merged sessions concatenate, earlier first. */
const valuesOf: Aggregator<Reading, number[], number[]> = {
  init: () => [],
  add: (values, reading) => [...values, reading.v],
  merge: (first, second) => [...first, ...second],
  result: (values) => values,
};

function windowOf(window: WindowCase) {
  switch (window.type) {
    case 'tumbling':
      return tumbling(window.size, { grace: window.grace });
    case 'hopping':
      return hopping(window.size, window.advance, { grace: window.grace });
    case 'session':
      return session(window.gap, { grace: window.grace });
    case 'count':
      return count(window.n, { perKey: true });
  }
}

function buildJob(job: JobCase, source: Source, target: Target) {
  const windowed = aggregate<Reading>(source)
    .filter((r) => !r.skip)
    .eventTime((r) => r.t)
    .key((r) => r.key)
    .window(windowOf(job.window));
  // Count windows close by count only: they have neither a watermark nor late messages.
  const configured =
    job.window.type === 'count'
      ? windowed
      : windowed.maxOutOfOrderness(job.maxOutOfOrderness).late(job.late);
  return configured
    .aggregate(valuesOf)
    .to(target, { pack: job.pack, format: job.format, retryDelayMs: 0 });
}

const encode = (readings: readonly Reading[]): Uint8Array[] => readings.map((r) => jsonMessage(r));

/** The job's uninterrupted run on the embedded broker, over streams named as on RabbitMQ. */
async function onMemory(
  job: JobCase,
  readings: readonly Reading[],
  from: string,
  to: string,
): Promise<Buffer[]> {
  const broker = new MemoryBroker();
  broker.createStream(from);
  broker.createStream(to);
  broker.append(from, encode(readings));
  await buildJob(job, broker.source(from), broker.target(to, { producer: PRODUCER })).run({
    untilCaughtUp: true,
  });
  return broker.messages(to).map((m) => Buffer.from(m.bytes));
}

/** The process of a crashed run is gone: nothing escapes it but this, which ends the run. */
class InjectedCrash extends Error {
  override readonly name = 'InjectedCrash';
}

/**
 * A RabbitMQ target that fails as `crash` says at its `atPublish`-th publish. Like every
 * target it fences after the failure it injects: later publishes are refused (retriable)
 * until the resume point has been asked again, so that a publish after the lost one cannot
 * be stored and leave a hole; a dead process publishes nothing more at all.
 */
class CrashingTarget {
  private publishes = 0;
  private fenced = false;
  private dead = false;
  /** Publishes handed to RabbitMQ, settled or not: the run's end waits for them. */
  private readonly sent: Promise<unknown>[] = [];
  /** Whether the crash happened: the run got as far as its publish. */
  fired = false;

  constructor(
    private readonly inner: Target,
    private readonly crash: Crash | undefined,
    private readonly stop: AbortController,
  ) {}

  get target(): Target {
    return {
      ...forwarding(this.inner),
      lastPublishingId: () => {
        this.fenced = false;
        return this.inner.lastPublishingId();
      },
      publish: (id, messages) => this.publish(id, messages),
    };
  }

  /** Waits for every publish handed to RabbitMQ, so that the next run sees what they stored. */
  async settled(): Promise<void> {
    await Promise.allSettled(this.sent);
  }

  private publish(id: bigint, messages: readonly Uint8Array[]): Promise<void> {
    if (this.dead) return Promise.reject(new InjectedCrash('the process is gone'));
    if (this.fenced) {
      return Promise.reject(new PublishError(this.inner.stream, id, true, 'fenced (injected)'));
    }
    this.publishes++;
    const crash = this.crash?.atPublish === this.publishes ? this.crash : undefined;
    if (crash !== undefined) this.fired = true;
    if (crash?.kind === 'before-send' || crash?.kind === 'retriable') {
      return this.fail(crash.kind, id);
    }
    const sending = this.inner.publish(id, messages);
    this.sent.push(sending);
    if (crash?.kind === 'after-send') return this.fail(crash.kind, id);
    return crash?.kind === 'abort' ? sending.then(() => this.stop.abort()) : sending;
  }

  private fail(kind: CrashKind, id: bigint): Promise<never> {
    if (kind === 'retriable') {
      this.fenced = true;
      return Promise.reject(
        new PublishError(this.inner.stream, id, true, 'connection lost (injected)'),
      );
    }
    this.dead = true;
    return Promise.reject(new InjectedCrash(`crashed at publish ${this.publishes} (${kind})`));
  }
}

/**
 * Runs a fresh job on RabbitMQ once per crash, with that crash armed, then once without (as
 * restarts after crashes would), and returns the target's messages. Counts in `coverage` the
 * crashes that fired, of each kind, and the runs where a restart found a stored result and
 * where one re-read offsets before that result (windows were open there).
 */
async function onRabbit(
  job: JobCase,
  readings: readonly Reading[],
  crashes: readonly Crash[],
  from: string,
  to: string,
  coverage: Coverage,
): Promise<Buffer[]> {
  await real.rabbit.createStream(from);
  await real.rabbit.createStream(to);
  try {
    await publishAll(real.rabbit, from, encode(readings));
    const figures = { resumedAfterResult: false, reReadBeforeLast: false };
    for (const crash of [...crashes, undefined]) {
      const inner = real.rabbit.target(to, { producer: PRODUCER });
      const stop = new AbortController();
      const crashing = new CrashingTarget(inner, crash, stop);
      const runner = buildJob(job, real.rabbit.source(from), crashing.target);
      runner.on('started', ({ lastPublishingId, from: resumeAt }) => {
        if (lastPublishingId > 0n) figures.resumedAfterResult = true;
        // Recovery re-reads the source from before its last result: windows were open there.
        if (lastPublishingId > 0n && resumeAt !== 'first' && resumeAt <= lastPublishingId) {
          figures.reReadBeforeLast = true;
        }
      });
      try {
        await runner.run({ untilCaughtUp: true, signal: stop.signal });
      } catch (error) {
        if (!(error instanceof InjectedCrash)) throw error;
      } finally {
        await crashing.settled();
        await inner.close();
      }
      if (crash !== undefined && crashing.fired) {
        coverage.count('crashes fired');
        coverage.count(`${crash.kind} fired`);
      }
    }
    coverage.count('runs resuming after a stored result', figures.resumedAfterResult);
    coverage.count('runs restarting before their last result', figures.reReadBeforeLast);
    return (await readAll(real.rabbit, to)).map((bytes) => Buffer.from(bytes));
  } finally {
    await real.rabbit.deleteStream(from);
    await real.rabbit.deleteStream(to);
  }
}

/** The results of a target, one per step (a 'batch' step's messages share one publishing id). */
function resultsOf(messages: readonly Uint8Array[]): DecodedResult[] {
  const results: DecodedResult[] = [];
  for (const bytes of messages) {
    const result = decodeResult(bytes);
    if (results.at(-1)?.lastOffset !== result.lastOffset) results.push(result);
  }
  return results;
}

/** Every message read up to the last result is counted in exactly one result. */
function expectEveryMessageCountedOnce(results: readonly DecodedResult[]): void {
  expectStrictlyIncreasing(results.map((r) => r.lastOffset));
  let next = 0n;
  for (const result of results) {
    expect(result.firstOffset).toBe(next);
    next = result.lastOffset + 1n;
  }
  const last = results.at(-1);
  if (last !== undefined) {
    expect(results.reduce((n, r) => n + r.messages, 0)).toBe(Number(last.lastOffset + 1n));
  }
}

describe('event-time windows on RabbitMQ through crashes', () => {
  it(
    'should write the same bytes as an uninterrupted run on the embedded broker, every message counted once',
    async () => {
      const coverage = new Coverage('event-time windows on RabbitMQ through crashes');
      const caseArb = jobArb.chain((job) =>
        fc.record({
          job: fc.constant(job),
          stream: readingsArb(job.maxOutOfOrderness),
          crashes: crashesArb,
        }),
      );
      await fc.assert(
        fc.asyncProperty(caseArb, async ({ job, stream: { disorder, readings }, crashes }) => {
          coverage.run();
          const [from, to] = [uniqueStream('et-source'), uniqueStream('et-target')];
          const expected = await onMemory(job, readings, from, to);
          const actual = await onRabbit(job, readings, crashes, from, to, coverage);
          // Decoded first, so that a difference reads as results, not bytes.
          expect(actual.map((bytes) => decodeResult(bytes))).toEqual(
            expected.map((bytes) => decodeResult(bytes)),
          );
          expect(actual).toEqual(expected);
          const results = resultsOf(actual);
          expectEveryMessageCountedOnce(results);
          // Within maxOutOfOrderness, no message is ever behind the watermark.
          const late = results.reduce((n, r) => n + r.lateCount + r.lateDropped, 0);
          if (disorder === 'bounded') expect(late).toBe(0);
          coverage.count(job.window.type);
          coverage.count(`${disorder} disorder`);
          coverage.add('results', results.length);
          coverage.count('runs with 2 results or more', results.length >= 2);
          coverage.count('runs with late messages', late > 0);
        }),
        // Each run costs about a second of broker work: a failure stops shrinking in time to
        // be reported with the smallest case found by then.
        { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
      );
      coverage.expectRates({
        'runs with 2 results or more': 0.85,
        'runs resuming after a stored result': 0.75,
        'runs restarting before their last result': 0.7,
        'bounded disorder': 0.5,
        'unbounded disorder': 0.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
