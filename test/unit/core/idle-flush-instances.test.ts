// An idle flush and several instances of one job. A silence is one instance's clock: two
// instances reading at once would flush at different offsets and the broker would store both
// (messages counted twice), so `flush.idleMs` is refused on a source read without a single
// active consumer group unless the user says they run one instance (`oneInstance`). With a
// group, one instance reads at a time: a handover is exact, the next instance resumes from the
// last stored result and goes on with the window it flushed, as one instance would have.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  jsonMessage,
  type FlushOptions,
  type PartitionedSource,
  type Runner,
  type Source,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { rabbitSource } from '../../../src/rabbitmq/index.js';
import { superStreamSource } from '../../../src/rabbitmq/super-stream-source.js';
import { results, T0 } from '../../support/memory-job.js';
import { expectEveryMessageCountedOnce, stepsOf } from '../../support/target-stream.js';

const DAY = 86_400_000;
const GROUP = 'daily';

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

function emptyBroker(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  return broker;
}

/** Each sensor's daily sum (a step window), publishing as 'daily'. */
function dailyJob(broker: MemoryBroker, source: Source, flush: FlushOptions) {
  return aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .tumbling('1d')
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'daily' }), { retryDelayMs: 0, flush });
}

/** Each sensor's readings counted per 10 ms with 10 ms of grace (event-time windows). */
function countsJob(broker: MemoryBroker, source: Source, flush: FlushOptions) {
  return aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .key((r) => r.sensor)
    .tumbling(10, { grace: 10 })
    .aggregate({
      init: () => 0,
      add: (n: number) => n + 1,
      result: (n) => n,
      merge: (a, b) => a + b,
    })
    .to(broker.target('target', { producer: 'counts' }), { retryDelayMs: 0, flush });
}

/** A job's run and events: what an instance of it needs. */
type Job = Pick<Runner<Reading, unknown, unknown>, 'run' | 'on'>;
type JobOf = (broker: MemoryBroker, source: Source, flush: FlushOptions) => Job;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One instance of a job: started and stopped at will; records the ids it saw confirmed. */
function instance(job: Job) {
  const published: bigint[] = [];
  job.on('published', ({ lastOffset }) => published.push(lastOffset));
  let running: { stop: AbortController; done: Promise<unknown> } | undefined;
  return {
    published,
    start(): void {
      const stop = new AbortController();
      running = { stop, done: job.run({ signal: stop.signal }) };
    },
    async stop(): Promise<void> {
      running?.stop.abort();
      await running?.done;
      running = undefined;
    },
  };
}

/** A step of a scenario: a reading appended (one chunk) and flushed by the silence after it, or a handover. */
type Step = Reading | 'handover';

/**
 * Runs `steps` with two instances of `jobOf` on one single active consumer source (`handover`:
 * the active one stops, the standby takes over, the stopped one joins again as standby), or
 * with one instance and no handover. Each reading is appended once the one before it was
 * published: every silence after it flushes it. Returns the target's bytes and who published.
 */
async function run(jobOf: JobOf, steps: readonly Step[], instances: 1 | 2) {
  const broker = emptyBroker();
  const flush = { idleMs: 10 };
  const make = () =>
    instance(jobOf(broker, broker.source('source', { singleActive: { name: GROUP } }), flush));
  const all = Array.from({ length: instances }, make);
  let [active, standby] = all;
  active?.start();
  while (broker.consumerGroup('source', GROUP).active === undefined) await sleep(1);
  standby?.start();
  while (broker.consumerGroup('source', GROUP).members.length < instances) await sleep(1);
  let offset = 0n;
  for (const step of steps) {
    if (step === 'handover') {
      await active?.stop();
      [active, standby] = [standby, active];
      standby?.start();
      continue;
    }
    broker.append('source', [jsonMessage(step)], { timestamp: T0 });
    while (!results(broker).some((r) => r.lastOffset === offset)) await sleep(2);
    offset++;
  }
  await Promise.all(all.map((one) => one.stop()));
  return {
    bytes: broker.messages('target').map((m) => m.bytes),
    published: all.map((one) => one.published),
  };
}

const at = (sensor: string, value: number, t: number): Reading => ({ sensor, value, t });

describe('an idle flush with two instances of one job on a single active consumer source', () => {
  it('is exact through handovers for step windows: the next instance goes on with the window the last one flushed', async () => {
    const steps: Step[] = [
      at('a', 1, T0),
      at('a', 2, T0 + 1),
      'handover',
      at('a', 4, T0 + 2),
      at('a', 8, T0 + DAY),
      'handover',
      at('a', 16, T0 + DAY + 1),
    ];
    const two = await run(dailyJob, steps, 2);
    const shape = two.bytes.map((bytes) => {
      const result = decodeResult(bytes);
      return {
        offsets: [result.firstOffset, result.lastOffset],
        flushed: result.flushed,
        outputs: result.outputs.map((o) => [o.key, o.value, o.continues]),
      };
    });
    expect(shape).toEqual([
      { offsets: [0n, 0n], flushed: true, outputs: [['a', 1, false]] },
      { offsets: [1n, 1n], flushed: true, outputs: [['a', 2, true]] },
      { offsets: [2n, 2n], flushed: true, outputs: [['a', 4, true]] },
      { offsets: [3n, 3n], flushed: true, outputs: [['a', 8, false]] },
      { offsets: [4n, 4n], flushed: true, outputs: [['a', 16, true]] },
    ]);
    // Both published: the handovers happened where the steps say.
    expect(two.published).toEqual([
      [0n, 1n, 4n],
      [2n, 3n],
    ]);
    expectEveryMessageCountedOnce(stepsOf(two.bytes));
    expect(two.bytes).toEqual((await run(dailyJob, steps, 1)).bytes);
  }, 20_000);

  it('is exact through handovers for event-time windows: the next instance repeats the flush its recovery state records', async () => {
    const steps: Step[] = [
      at('a', 1, 5),
      at('b', 1, 12),
      'handover',
      at('a', 1, 7),
      at('b', 1, 25), // [0,10) closes: watermark 25 passes its end + grace
      'handover',
      at('b', 1, 27),
      at('a', 1, 60),
    ];
    const two = await run(countsJob, steps, 2);
    expect(two.published).toEqual([
      [0n, 1n, 4n, 5n],
      [2n, 3n],
    ]);
    expect(two.bytes).toEqual((await run(countsJob, steps, 1)).bytes);
    // Every reading counted once: the parts of each window add up to its readings.
    const counted = new Map<string, number>();
    for (const result of two.bytes.map((bytes) => decodeResult(bytes))) {
      for (const output of result.outputs) {
        const id = `${String(output.key)}@${output.start}`;
        counted.set(id, (counted.get(id) ?? 0) + output.count);
      }
    }
    expect(Object.fromEntries(counted)).toEqual({ 'a@0': 2, 'b@10': 1, 'b@20': 2, 'a@60': 1 });
  }, 20_000);
});

describe('an idle flush on a source read without a single active consumer group', () => {
  const broker = emptyBroker();
  const target = broker.target('target', { producer: 'p' });
  const builder = (source: Source | PartitionedSource) =>
    aggregate<Reading>(source)
      .count(3)
      .reduce((sum, r) => sum + r.value, 0);

  it('is refused where it is given, with the rule and the value', () => {
    const make = () => builder(broker.source('source')).to(target, { flush: { idleMs: 30_000 } });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow(
      "idleMs needs one instance of the job reading 'source' at a time: two at once would each flush by its own clock, at different offsets, and count messages twice. Read it as a single active consumer (singleActive), or, if you run one instance only, say so with flush: { idleMs, oneInstance: true }, given: 30000",
    );
  });

  it('is accepted when the user says they run one instance, or from a single active consumer source', () => {
    expect(() =>
      builder(broker.source('source')).to(target, { flush: { idleMs: 30_000, oneInstance: true } }),
    ).not.toThrow();
    expect(() =>
      builder(broker.source('source', { singleActive: { name: GROUP } })).to(target, {
        flush: { idleMs: 30_000 },
      }),
    ).not.toThrow();
    // A flush at the end of an untilCaughtUp run is not refused: see the README.
    expect(() =>
      builder(broker.source('source')).to(target, { flush: { caughtUp: true } }),
    ).not.toThrow();
  });

  it('refuses oneInstance without idleMs, or not a boolean', () => {
    const plain = builder(broker.source('source'));
    expect(() => plain.to(target, { flush: { caughtUp: true, oneInstance: true } })).toThrow(
      new ConfigError('flush oneInstance', 'applies to idleMs only', true),
    );
    expect(() =>
      plain.to(target, { flush: { idleMs: 5, oneInstance: 'yes' as unknown as boolean } }),
    ).toThrow(new ConfigError('flush oneInstance', 'must be true or false', 'yes'));
  });

  it('is refused for a partitioned job over a super stream read without a group, and accepted with one', () => {
    const memory = new MemoryBroker();
    memory.createSuperStream('orders', { partitions: 2 });
    const partitioned = (singleActive: boolean) =>
      builder(
        memory.superStreamSource('orders', singleActive ? { singleActive: { name: 'job' } } : {}),
      );
    const toPartitions = (singleActive: boolean) =>
      partitioned(singleActive).toPartitions(
        (p) => memory.target('rollups', { producer: p.producer }),
        { name: 'job', flush: { idleMs: 1_000 } },
      );
    expect(() => toPartitions(false)).toThrow(
      "idleMs needs one instance of the job reading 'orders' at a time",
    );
    expect(() => toPartitions(true)).not.toThrow();
  });

  it("knows a RabbitMQ source's group, of a stream or of a super stream's partitions", async () => {
    const nowhere = { hostname: '127.0.0.1', port: 1, username: 'u', password: 'p', vhost: '/' };
    const idle = { flush: { idleMs: 1_000 } };
    const plain = rabbitSource('s', { connection: nowhere });
    const grouped = rabbitSource('s', { connection: nowhere, singleActive: { name: GROUP } });
    expect(grouped.group).toBe(GROUP);
    expect(() => builder(plain).to(target, idle)).toThrow(ConfigError);
    expect(() => builder(grouped).to(target, idle)).not.toThrow();
    const orders = superStreamSource('orders', () => Promise.resolve(['orders-0']), {
      connection: nowhere,
      singleActive: { name: GROUP },
    });
    expect((await orders.partitions()).map((partition) => partition.group)).toEqual([GROUP]);
  });
});
