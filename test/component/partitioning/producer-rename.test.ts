// Issue 17 item 3, the upgrade path: a partitioned job whose loops published under the names
// earlier versions derived (`<job>-<partition stream>`) must not, once upgraded to
// `<job>@<partition stream>`, read every partition again from its first offset and publish
// all its results a second time; it stops with a ProducerRenamedError unless told to re-read.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  jsonMessage,
  lastWriteId,
  ProducerRenamedError,
  PublishError,
  type Partition,
  type Target,
} from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import {
  JOB,
  ordersBroker,
  ordersJob,
  rollupsByProducer,
  type Order,
} from '../../support/jobs/partitioned-job.js';
import { crashingTarget } from '../../../examples/crashing-target.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { keepingLogger } from '../../support/doubles/keeping-logger.js';

/** The job as a version before the fix ran it: each loop under `<job>-<partition stream>`. */
async function runAsBefore(broker: MemoryBroker): Promise<void> {
  const summary = await ordersJob(broker, {
    singleActive: false,
    target: (_, partition) => broker.target('rollups', { producer: `${JOB}-${partition.stream}` }),
  }).run({ untilCaughtUp: true });
  expect(summary.results).toBeGreaterThan(0);
}

/** The upgraded job, its targets counting the other names they are asked about. */
function upgraded(
  broker: MemoryBroker,
  options: { allowRereadAfterRename?: boolean } = {},
  asked: string[] = [],
) {
  const counting = (partition: Partition): Target => {
    const target = broker.target('rollups', { producer: partition.producer });
    return {
      ...forwarding(target),
      lastPublishingIdOf: (producer) => {
        asked.push(producer);
        return target.lastPublishingIdOf(producer);
      },
    };
  };
  return aggregate<Order>(broker.superStreamSource('orders'))
    .count(3)
    .reduce((sum, order) => sum + order.amount, 0)
    .toPartitions(counting, { name: JOB, retryDelayMs: 0, ...options });
}

const oldNames = ['rollup-orders-0', 'rollup-orders-1'];

describe('a partitioned job upgraded from the former derived producer names', () => {
  it('stops before publishing anything, naming the target stream, both names, the old id and the ways out', async () => {
    const broker = ordersBroker(2, 2);
    await runAsBefore(broker);
    const running = upgraded(broker).run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(ProducerRenamedError);
    const error = (await running.catch((e: unknown) => e)) as ProducerRenamedError;
    expect(error).toMatchObject({
      code: 'PRODUCER_RENAMED',
      retriable: false,
      stream: 'rollups',
      formerPublishingId: lastWriteId(5n),
    });
    expect([error.producer, error.formerProducer]).toEqual(
      expect.arrayContaining([expect.stringMatching(/^rollup@orders-[01]$/)]),
    );
    expect(error.formerProducer).toBe(error.producer.replace('@', '-'));
    expect(error.message).toContain(`'${error.producer}'`);
    expect(error.message).toContain(`'${error.formerProducer}'`);
    expect(error.message).toContain("stream 'rollups'");
    expect(error.message).toContain(`last publishing id ${lastWriteId(5n)}`);
    expect(error.message).toContain('target factory');
    expect(error.message).toContain('allowRereadAfterRename: true');
    // Nothing was published twice: the target holds the old names' results only.
    expect([...rollupsByProducer(broker).keys()].sort()).toEqual(oldNames);
  });

  it('keeps going under the old names given through the target factory', async () => {
    const broker = ordersBroker(2, 2);
    await runAsBefore(broker);
    const summary = await ordersJob(broker, {
      singleActive: false,
      target: (_, partition) =>
        broker.target('rollups', { producer: `${JOB}-${partition.stream}` }),
    }).run({ untilCaughtUp: true });
    expect(summary.results).toBe(0);
  });

  it('re-reads every partition under the new names with allowRereadAfterRename, and then no longer asks', async () => {
    const broker = ordersBroker(2, 2);
    await runAsBefore(broker);
    const asked: string[] = [];
    const summary = await upgraded(broker, { allowRereadAfterRename: true }, asked).run({
      untilCaughtUp: true,
    });
    expect(summary).toMatchObject({ results: 4, duplicates: 0 });
    expect(asked).toEqual([]);
    const written = rollupsByProducer(broker);
    expect([...written.keys()].sort()).toEqual([...oldNames, 'rollup@orders-0', 'rollup@orders-1']);
    // The new names have published: the option can go, and the old names cost no query.
    const again = await upgraded(broker, {}, asked).run({ untilCaughtUp: true });
    expect(again.results).toBe(0);
    expect(asked).toEqual([]);
  });

  it('asks about the old name once per loop whose new name never published, and starts a fresh job', async () => {
    const broker = ordersBroker(2, 2);
    const asked: string[] = [];
    const summary = await upgraded(broker, {}, asked).run({ untilCaughtUp: true });
    expect(summary.results).toBe(4);
    expect(asked.sort()).toEqual(oldNames);
  });

  it('tells a new name whose last id 0 is its result for offset 0 from one that never published', async () => {
    const broker = ordersBroker(1, 2);
    await runAsBefore(broker);
    // The new name's one result so far is offset 0's: its last publishing id is 0 too.
    await broker
      .target('rollups', { producer: 'rollup@orders-0', connection: 'before' })
      .publish(0n, [jsonMessage(0)]);
    const asked: string[] = [];
    const summary = await upgraded(broker, {}, asked).run({ untilCaughtUp: true });
    expect(summary.results).toBe(2);
    expect(asked).toEqual(['rollup-orders-0']);
  });

  it('scans the target once per start for whether the new name published, however many reads ask', async () => {
    const broker = ordersBroker(1, 2);
    await runAsBefore(broker);
    await broker
      .target('rollups', { producer: 'rollup@orders-0', connection: 'before' })
      .publish(0n, [jsonMessage(0)]);
    // The renamed check asks, and so does the result of offset 0 published again (count(1)).
    let scans = 0;
    const summary = await aggregate<Order>(broker.superStreamSource('orders'))
      .count(1)
      .reduce((sum, order) => sum + order.amount, 0)
      .toPartitions(
        (partition) => {
          const target = broker.target('rollups', { producer: partition.producer });
          return {
            ...forwarding(target),
            hasPublished: () => {
              scans++;
              return target.hasPublished();
            },
          };
        },
        { name: JOB, retryDelayMs: 0 },
      )
      .run({ untilCaughtUp: true });
    expect(summary.duplicates).toBe(1);
    expect(scans).toBe(1);
  });

  it('warns once per loop when its target cannot tell whether the former name published (a wrapper without lastPublishingIdOf)', async () => {
    const broker = ordersBroker(2, 2);
    await runAsBefore(broker);
    const logger = keepingLogger();
    const summary = await aggregate<Order>(broker.superStreamSource('orders'))
      .count(3)
      .reduce((sum, order) => sum + order.amount, 0)
      .toPartitions(
        (partition) => {
          // eslint-disable-next-line @typescript-eslint/unbound-method -- dropped, never called
          const { lastPublishingIdOf: _, ...target } = forwarding(
            broker.target('rollups', { producer: partition.producer }),
          );
          // The first publish fails as retriable: the loop starts again from id 0, and asks
          // about the former name again.
          let failed = false;
          return {
            ...target,
            publish: async (id, messages) => {
              if (failed) return target.publish(id, messages);
              failed = true;
              throw new PublishError(target.stream, id, true, 'connection lost');
            },
          };
        },
        { name: JOB, retryDelayMs: 0, logger },
      )
      .run({ untilCaughtUp: true });
    // Unchecked, it re-read both partitions (what the warning says), restarting once each.
    expect(summary).toMatchObject({ results: 4, restarts: 2 });
    const warnings = logger.lines.filter(
      ([level, , message]) =>
        level === 'warn' && message.startsWith('the target has no lastPublishingIdOf'),
    );
    const formerNames = warnings.map(
      ([, fields]) => (fields as { formerProducer?: string }).formerProducer,
    );
    expect(formerNames.sort()).toEqual(oldNames);
  });

  it("is checked through the examples' crashing target, which forwards lastPublishingIdOf", async () => {
    const broker = ordersBroker(2, 2);
    await runAsBefore(broker);
    const running = aggregate<Order>(broker.superStreamSource('orders'))
      .count(3)
      .reduce((sum, order) => sum + order.amount, 0)
      .toPartitions(
        (p) =>
          crashingTarget(broker.target('rollups', { producer: p.producer }), 99, 'after-publish'),
        { name: JOB, retryDelayMs: 0 },
      )
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(ProducerRenamedError);
  });

  it('refuses an allowRereadAfterRename that is not a boolean', () => {
    const broker = ordersBroker(1, 1);
    expect(() =>
      aggregate<Order>(broker.superStreamSource('orders'))
        .count(3)
        .reduce((sum, order) => sum + order.amount, 0)
        .toPartitions((p) => broker.target('rollups', { producer: p.producer }), {
          name: JOB,
          allowRereadAfterRename: 'yes' as unknown as boolean,
        }),
    ).toThrow(ConfigError);
  });
});
