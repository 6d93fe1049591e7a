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
  jsonMessage,
  type PartitionedSource,
  type Source,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { rabbitSource } from '../../../src/rabbitmq/index.js';
import { superStreamSource } from '../../../src/rabbitmq/read/super-stream-source.js';
import {
  COUNTS,
  countedPerWindow,
  countsJob,
  DAILY,
  dailyJob,
  GROUP,
  runInstances,
  shapeOf,
  type FlushWorld,
  type JobOf,
  type Step,
} from '../../support/jobs/idle-flush-instances.js';
import { T0, type Reading } from '../../support/jobs/memory-job.js';
import { expectEveryMessageCountedOnce, stepsOf } from '../../support/results/target-stream.js';
import { bound } from '../../support/timing.js';

function emptyBroker(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  return broker;
}

/** `steps` on a fresh embedded broker with `instances` instances flushing after 10 ms of silence. */
function run(jobOf: JobOf, steps: readonly Step[], instances: 1 | 2) {
  const broker = emptyBroker();
  const world: FlushWorld = {
    source: () => broker.source('source', { singleActive: { name: GROUP } }),
    target: (producer) => broker.target('target', { producer }),
    append: (reading) => {
      broker.append('source', [jsonMessage(reading)]);
      return Promise.resolve();
    },
    stored: () => Promise.resolve(broker.messages('target').map((m) => m.bytes)),
  };
  return runInstances(world, jobOf, steps, { instances, idleMs: 10 });
}

describe('an idle flush with two instances of one job on a single active consumer source', () => {
  it(
    'is exact through handovers for step windows: the next instance goes on with the window the last one flushed',
    async () => {
      const two = await run(dailyJob, DAILY.steps, 2);
      expect(two.stored.map(shapeOf)).toEqual(DAILY.results);
      // Both published: the handovers happened where the steps say.
      expect(two.published).toEqual(DAILY.published);
      expectEveryMessageCountedOnce(stepsOf(two.stored));
      // What one instance with the same flushes publishes, byte for byte.
      expect(two.stored).toEqual((await run(dailyJob, DAILY.steps, 1)).stored);
    },
    bound(20_000),
  );

  it(
    'is exact through handovers for event-time windows: the next instance repeats the flush its recovery state records',
    async () => {
      const two = await run(countsJob, COUNTS.steps, 2);
      expect(two.published).toEqual(COUNTS.published);
      // Every reading counted once: the parts of each window add up to its readings.
      expect(countedPerWindow(two.stored)).toEqual(COUNTS.counted);
      expect(two.stored).toEqual((await run(countsJob, COUNTS.steps, 1)).stored);
    },
    bound(20_000),
  );
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
