// Event-time windows (tumbling and hopping with grace, per-key sessions with grace, per-key
// counts) against RabbitMQ, through crashes: random out-of-order streams of 20 to 120
// messages are run on the real broker with jobs killed at random publishes and restarted
// (each restart recovers from the producer's last result, read back from RabbitMQ), and the
// target must equal, byte for byte, the same job's uninterrupted run on the embedded broker.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeResult,
  PublishError,
  type Aggregator,
  type DecodedResult,
  type Source,
  type Target,
} from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { Coverage, PROPERTY_TIMEOUT_MS } from '../support/arbitraries/coverage.js';
import {
  eventTimeCaseArbitrary,
  type EventTimeCase,
} from '../support/arbitraries/event-time-arbitrary.js';
import { caseJob, caseMessages } from '../support/jobs/event-time-job.js';
import type { ReferenceMessage } from '../support/models/event-time-reference.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { rabbitForTests, targetAfterJob, uniqueStream } from '../support/brokers/rabbitmq.js';
import { packings } from '../support/arbitraries/scenario.js';
import { expectStepsTile, stepsOf } from '../support/results/target-stream.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const PRODUCER = 'event-time-job';
const RUNS = 20;
const TIME_LIMIT_MS = bound(150_000);
const cases = eventTimeCaseArbitrary({ minMessages: 20, maxMessages: 120 });

/**
 * How a run of the job ends early. 'before-send' and 'after-send': the process dies at that
 * publish, before handing it to the broker or just after (it may be stored); 'retriable': the
 * publish fails as a lost connection would, and the job resumes from the broker in the same
 * run; 'abort': the job is stopped by its signal once that publish is confirmed.
 */
const crashKinds = ['before-send', 'after-send', 'retriable', 'abort'] as const;
type CrashKind = (typeof crashKinds)[number];

interface Crash {
  /** 1 = the first publish of the run. */
  readonly atPublish: number;
  readonly kind: CrashKind;
}

const crashesArb: fc.Arbitrary<Crash[]> = fc.array(
  fc.record({
    atPublish: fc.integer({ min: 1, max: 6 }),
    kind: fc.constantFrom(...crashKinds),
  }),
  { minLength: 2, maxLength: 6, size: 'max' },
);

/**
 * Each window's values (offset + 1) in the order added; merged sessions concatenate, earlier
 * first. Stronger than the reference model's sum: an output names its messages and their order.
 */
const valuesOf: Aggregator<ReferenceMessage, number[], number[]> = {
  init: () => [],
  add: (values, m) => [...values, m.value],
  merge: (first, second) => [...first, ...second],
  result: (values) => values,
};

type Packing = (typeof packings)[number];
type Streams = Parameters<typeof targetAfterJob>[1];

function buildJob(c: EventTimeCase, packing: Packing, source: Source, target: Target) {
  return caseJob(c.config, source, target, valuesOf, { ...packing, retryDelayMs: 0 });
}

/** The job's uninterrupted run on the embedded broker, over streams named as on RabbitMQ. */
async function onMemory(c: EventTimeCase, packing: Packing, streams: Streams): Promise<Buffer[]> {
  const broker = new MemoryBroker();
  broker.createStream(streams.source);
  broker.createStream(streams.target);
  broker.append(streams.source, caseMessages(c.messages));
  const target = broker.target(streams.target, { producer: PRODUCER });
  await buildJob(c, packing, broker.source(streams.source), target).run({ untilCaughtUp: true });
  return broker.messages(streams.target).map((m) => Buffer.from(m.bytes));
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
    // Handled at once: after an injected failure nobody awaits it before `settled`, and the
    // run's end releases the producer, which fails it if still unsent.
    this.sent.push(sending.catch(() => undefined));
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
 * runs where a crash of each kind fired, and those where a restart found a stored result and
 * where one re-read offsets before that result (windows were open there).
 */
async function onRabbit(
  c: EventTimeCase,
  packing: Packing,
  crashes: readonly Crash[],
  streams: Streams,
  coverage: Coverage,
): Promise<Buffer[]> {
  const figures = { resumedAfterResult: false, reReadBeforeLast: false, crashed: false };
  const kindsFired = new Set<CrashKind>();
  const bytes = await targetAfterJob(real.rabbit, streams, caseMessages(c.messages), async () => {
    for (const crash of [...crashes, undefined]) {
      const inner = real.rabbit.target(streams.target, { producer: PRODUCER });
      const stop = new AbortController();
      const crashing = new CrashingTarget(inner, crash, stop);
      const runner = buildJob(c, packing, real.rabbit.source(streams.source), crashing.target);
      runner.on('started', ({ lastOffset, from: resumeAt }) => {
        if (lastOffset !== undefined) figures.resumedAfterResult = true;
        // Recovery re-reads the source from before its last result: windows were open there.
        if (lastOffset !== undefined && resumeAt !== 'first' && resumeAt <= lastOffset) {
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
        kindsFired.add(crash.kind);
        figures.crashed = true;
      }
    }
  });
  coverage.count('runs where a crash fired', figures.crashed);
  for (const kind of kindsFired) coverage.count(`runs where ${kind} fired`);
  coverage.count('runs resuming after a stored result', figures.resumedAfterResult);
  coverage.count('runs restarting before their last result', figures.reReadBeforeLast);
  return bytes;
}

/** Each step's first result: it carries the step's offsets and counts. */
const resultsOf = (messages: readonly Uint8Array[]): DecodedResult[] =>
  stepsOf(messages).map((parts) => parts[0] as DecodedResult);

describe('event-time windows on RabbitMQ through crashes', () => {
  it(
    'should write the same bytes as an uninterrupted run on the embedded broker, every message counted once',
    async () => {
      const coverage = new Coverage('event-time windows on RabbitMQ through crashes');
      const caseArb = fc.record({
        c: cases,
        packing: fc.constantFrom(...packings),
        crashes: crashesArb,
      });
      await fc.assert(
        fc.asyncProperty(caseArb, async ({ c, packing, crashes }) => {
          coverage.run();
          const streams = { source: uniqueStream('et-source'), target: uniqueStream('et-target') };
          const expected = await onMemory(c, packing, streams);
          const actual = await onRabbit(c, packing, crashes, streams, coverage);
          // Decoded first, so that a difference reads as results, not bytes.
          expect(actual.map((bytes) => decodeResult(bytes))).toEqual(
            expected.map((bytes) => decodeResult(bytes)),
          );
          expect(actual).toEqual(expected);
          const results = resultsOf(actual);
          expectStepsTile(results);
          // Within maxOutOfOrderness, no message is ever behind the watermark.
          const late = results.reduce((n, r) => n + r.lateCount + r.lateDropped, 0);
          if (c.disorder === 'bounded') expect(late).toBe(0);
          coverage.count(c.config.window.type);
          coverage.count(`${c.disorder} disorder`);
          coverage.count(
            'runs with filtered messages',
            c.messages.some((m) => m.filtered === true),
          );
          coverage.add('results', results.length);
          coverage.count('runs with 2 results or more', results.length >= 2);
          coverage.count('runs with late messages', late > 0);
        }),
        // Each run costs about a second of broker work: a failure stops shrinking in time to
        // be reported with the smallest case found by then.
        // eslint-disable-next-line @typescript-eslint/no-deprecated -- still supported; the plugin form is a separate change
        { numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
      );
      // Cut short by the time limit, a property passes on the runs it made: enough of them.
      expect(coverage.runsMade).toBeGreaterThanOrEqual(RUNS / 2);
      coverage.expectRates({
        ...Object.fromEntries(crashKinds.map((kind) => [`runs where ${kind} fired`, 0.45])),
        'runs where a crash fired': 0.8,
        'runs with 2 results or more': 0.85,
        'runs resuming after a stored result': 0.75,
        'runs restarting before their last result': 0.7,
        'bounded disorder': 0.5,
        'unbounded disorder': 0.5,
        'runs with filtered messages': 0.5,
      });
    },
    PROPERTY_TIMEOUT_MS,
  );
});
