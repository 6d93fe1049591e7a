// Split brain on the real broker: two instances of one job, with the same producer name, each on
// its own connection, both active at once over one source stream and one target (as RabbitMQ's
// single-active-consumer coordinator admits may briefly happen after a network partition
// heals). Each instance's network is stalled and dropped in turn so that each stores results
// the other never sent, and a `rabbitmq-streams restart_stream` of the target hits both while
// they race. The target must be exactly the uninterrupted run's, byte for byte.
//
// Needs the local broker of scripts/rabbitmq.sh (the CLI runs in its chroot).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { decodeResult, jsonMessage, readStepId, type Target } from '../../src/index.js';
import { readingsPartitionJob } from '../support/jobs/readings-job.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { forwarding } from '../support/doubles/forwarding-target.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

const MESSAGES = 12_000;
/** Source offsets an instance gets ahead of the other in each phase of the test. */
const LEAD = 1_500;

const script = fileURLToPath(new URL('../../scripts/rabbitmq.sh', import.meta.url));
const real = rabbitForTests();
const source = real.track(uniqueStream('split-brain-source'));
const PRODUCER = 'split-brain-job';

/** A second connection, as a second process would have. */
let other: RabbitMQ | undefined;

beforeAll(async () => {
  await real.rabbit.createStream(source);
  const readings = Array.from({ length: MESSAGES }, (_, i) =>
    jsonMessage({ sensor: i % 7, value: (i * 7919) % 1000 }),
  );
  await publishAll(real.rabbit, source, readings);
  other = await connect(inject('rabbitmqUrl'));
}, bound(120_000));

afterAll(async () => {
  await other?.close();
});

/** The last source offset of the step a write's publishing id belongs to. */
function stepOf(id: bigint): bigint {
  const step = readStepId(id);
  if (step.kind !== 'write') throw new Error(`publishing id ${id} is not a job's write`);
  return step.offset;
}

/**
 * An instance's network path to the target: while closed, its writes are held back (a stalled
 * link), then handed over in order when it opens. Records the steps (by their last source
 * offset) whose writes it handed over and confirmed.
 */
class Path {
  readonly sent = new Set<bigint>();
  readonly confirmed = new Set<bigint>();
  maxSent = 0n;
  maxConfirmed = 0n;
  /** When set, the link stalls by itself before handing over a step past this offset. */
  stallPast: bigint | undefined;
  /** It stalled by itself (`stallPast`). */
  stalledPast = false;
  private opened: Promise<void> = Promise.resolve();
  private release: (() => void) | undefined;
  private afterNextSend: (() => void) | undefined;

  target(inner: Target): Target {
    return {
      ...forwarding(inner),
      publish: async (id, messages) => {
        const step = stepOf(id);
        if (this.stallPast !== undefined && step > this.stallPast) {
          this.stalledPast = true;
          this.close();
        }
        await this.opened;
        this.sent.add(step);
        if (step > this.maxSent) this.maxSent = step;
        const publish = inner.publish(id, messages);
        const action = this.afterNextSend;
        this.afterNextSend = undefined;
        action?.();
        await publish;
        this.confirmed.add(step);
        if (step > this.maxConfirmed) this.maxConfirmed = step;
      },
    };
  }

  close(): void {
    if (this.release !== undefined) return;
    this.opened = new Promise((resolve) => (this.release = resolve));
  }

  /** Opens; `then`, if given, runs just after the first write held back is handed over. */
  open(then?: () => void): void {
    this.afterNextSend = then;
    this.release?.();
    this.release = undefined;
  }
}

async function until(condition: () => boolean, done: () => boolean): Promise<void> {
  while (!condition()) {
    if (done())
      throw new Error('the instances finished before the test could make them interleave');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('two instances of one job with one producer name, active at once on RabbitMQ', () => {
  it(
    "should leave exactly the uninterrupted run's target through stalls, dropped connections and a restart_stream",
    async () => {
      const reference = await real.newStream('split-brain-reference');
      const shared = await real.newStream('split-brain-target');
      const rabbitB = other as RabbitMQ;

      const plain = real.rabbit.target(reference, { producer: PRODUCER });
      await readingsPartitionJob(real.rabbit.source(source), plain).run({ untilCaughtUp: true });
      await plain.close();
      const expected = await readAll(real.rabbit, reference);

      const a = new Path();
      const b = new Path();
      const targetA = real.rabbit.target(shared, { producer: PRODUCER });
      const targetB = rabbitB.target(shared, { producer: PRODUCER });
      let finished = 0;
      const done = () => finished === 2;
      const run = (rabbit: RabbitMQ, path: Path, target: Target) =>
        readingsPartitionJob(rabbit.source(source), path.target(target))
          .run({ untilCaughtUp: true })
          .finally(() => finished++);

      // A alone for a while; B then starts from A's resume point.
      const runA = run(real.rabbit, a, targetA);
      await until(() => a.maxConfirmed >= BigInt(LEAD), done);
      const runB = run(rabbitB, b, targetB);
      // A's link stalls; B goes past everything A sent.
      a.close();
      await until(() => b.maxConfirmed >= a.maxSent + BigInt(LEAD), done);
      // B's link stalls; A's heals, but its connection drops with a write on it: A resumes after
      // the step the broker's last publishing id names, past B, and goes past everything B sent.
      b.close();
      a.open(() => real.rabbit.dropConnectionForTesting());
      await until(() => a.maxConfirmed >= b.maxSent + BigInt(LEAD), done);
      // The same for B: it resumes past A, and both race.
      // Each stalls by itself 900 past where the race starts, so that the faster one cannot
      // finish before the target stream restarts under both.
      const raced = a.maxConfirmed;
      a.stallPast = raced + 900n;
      b.stallPast = raced + 900n;
      b.open(() => rabbitB.dropConnectionForTesting());
      await until(() => a.stalledPast && b.stalledPast, done);
      // The target stream restarts under both (their links stalled, so that it lands before the
      // end): the broker drops both producers, and both resume from the same point and race on.
      a.close();
      b.close();
      a.stallPast = undefined;
      b.stallPast = undefined;
      await promisify(execFile)(script, ['streams', 'restart_stream', shared], {
        timeout: bound(60_000),
      });
      a.open();
      b.open();
      const [summaryA, summaryB] = await Promise.all([runA, runB]);
      await Promise.all([targetA.close(), targetB.close()]);

      const actual = await readAll(real.rabbit, shared);
      expect(actual.length).toBe(MESSAGES / 3);
      expect(actual.map((m) => Buffer.from(m))).toEqual(expected.map((m) => Buffer.from(m)));

      // Which instance stored what, from what each handed over: a result one instance never
      // sent was stored by the other.
      // Each result by its step's last source offset, as the paths record them.
      const steps = actual.map((m) => decodeResult(m).lastOffset);
      const onlyA = steps.filter((step) => !b.sent.has(step));
      const onlyB = steps.filter((step) => !a.sent.has(step));
      // Confirmed to both and stored once: the broker discarded one of the two.
      const both = steps.filter((step) => a.confirmed.has(step) && b.confirmed.has(step));
      console.log(
        `split brain on RabbitMQ: ${steps.length} results, ${onlyA.length} stored by A only, ` +
          `${onlyB.length} by B only, ${both.length} confirmed to both (one discarded as a duplicate); ` +
          `A resumed ${summaryA.restarts} times, B ${summaryB.restarts} times; their summaries ` +
          `count ${summaryA.results} and ${summaryB.results} results (discards included)`,
      );
      expect(onlyA.length).toBeGreaterThan(0);
      expect(onlyB.length).toBeGreaterThan(0);
      expect(both.length).toBeGreaterThan(0);
      // B stored results between two of A's.
      const firstA = onlyA[0] as bigint;
      const lastA = onlyA.at(-1) as bigint;
      expect(onlyB.some((step) => step > firstA && step < lastA)).toBe(true);
      expect(summaryA.restarts).toBeGreaterThanOrEqual(2);
      expect(summaryB.restarts).toBeGreaterThanOrEqual(2);
    },
    bound(120_000),
  );
});
