import { describe, expect, expectTypeOf, it } from 'vitest';
import * as main from '../../../src/index.js';
import { ConfigError, type Partition, type PartitionedRunOptions } from '../../../src/index.js';
import {
  JOB,
  ordersBroker,
  ordersJob,
  rollupsByProducer,
} from '../../support/jobs/partitioned-job.js';

describe('a partitioned run given the partitions it takes', () => {
  it('runs loops for those partitions only, leaving the others unread, and two runs of complementary filters write what one full run writes', async () => {
    const whole = ordersBroker(3, 2);
    await ordersJob(whole, { singleActive: false }).run({ untilCaughtUp: true });

    const split = ordersBroker(3, 2);
    const asked: number[] = [];
    const odd = (partition: Partition) => (asked.push(partition.index), partition.index % 2 === 1);
    const job = ordersJob(split);
    const groupSizes: number[][] = [];
    // The partitions left out never join their group: another process takes them.
    job.on('started', () =>
      groupSizes.push(
        split.partitions('orders').map((p) => split.consumerGroup(p, JOB).members.length),
      ),
    );
    const summary = await job.run({ untilCaughtUp: true, partitions: odd });
    expect(groupSizes).toEqual([[0, 1, 0]]);
    expect(asked).toEqual([0, 1, 2]);
    expect(summary).toMatchObject({ results: 2, partitions: [{ results: 2 }] });
    expect([...rollupsByProducer(split).keys()]).toEqual(['rollup@orders-1']);

    await ordersJob(split).run({ untilCaughtUp: true, partitions: (p) => !odd(p) });
    const sorted = (written: Map<string, Uint8Array[]>) =>
      new Map([...written].sort(([a], [b]) => a.localeCompare(b)));
    expect(sorted(rollupsByProducer(split))).toEqual(sorted(rollupsByProducer(whole)));
  });

  it('refuses a partitions option that is not a function, before anything runs', async () => {
    const broker = ordersBroker(2, 1);
    const run = ordersJob(broker).run({ untilCaughtUp: true, partitions: [0] as never });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow('partitions must be a function of the partition, given: ');
    expect(rollupsByProducer(broker).size).toBe(0);
  });

  it('offers no checkProducers to users: passed a no-op, it turned off the checks of one name per loop and 255 names per stream', () => {
    expectTypeOf<PartitionedRunOptions>().not.toHaveProperty('checkProducers');
    expect(Object.keys(main)).not.toContain('checkProducers');
  });
});
