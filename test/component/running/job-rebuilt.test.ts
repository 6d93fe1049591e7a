// A job built again in the same process after its run() ended (what an in-process supervisor
// does, after `stream-windows skip` say): same broker connection, same producer name. The
// embedded broker refuses a second producer of one name on one stream over one connection
// while the first is declared, as RabbitMQ does (code 17), so the runner must release its
// target's producer however run() ended.
import { describe, expect, it } from 'vitest';
import { jsonMessage, PublishError } from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { brokerWithCountedReadings, countJob, reading } from '../../support/jobs/memory-job.js';
import {
  appendOrders,
  ordersBroker,
  ordersJob,
  rollupsByProducer,
} from '../../support/jobs/partitioned-job.js';

/** Readings of 'a' at offsets `from`..`to` - 1, one per chunk (value = offset). */
function append(broker: MemoryBroker, from: number, to: number): void {
  for (let i = from; i < to; i++) broker.append('source', [jsonMessage(reading('a', i, i))]);
}

/** The target's bytes after one uninterrupted run over `count` readings. */
async function uninterrupted(count: number): Promise<Uint8Array[]> {
  const whole = brokerWithCountedReadings(count);
  await countJob(whole).run({ untilCaughtUp: true });
  return whole.messages('target').map((m) => m.bytes);
}

const targetBytes = (broker: MemoryBroker): Uint8Array[] =>
  broker.messages('target').map((m) => m.bytes);

describe('a job built again on the same connection under the same producer name', () => {
  it('runs again after a run that caught up, and the target is what one run writes', async () => {
    const broker = brokerWithCountedReadings(5);
    expect(await countJob(broker).run({ untilCaughtUp: true })).toMatchObject({ results: 5 });
    append(broker, 5, 8);
    const again = await countJob(broker).run({ untilCaughtUp: true });
    expect(again).toEqual({ results: 3, duplicates: 0, restarts: 0 });
    expect(targetBytes(broker)).toEqual(await uninterrupted(8));
  });

  it('runs again after a run stopped by its signal', async () => {
    const broker = brokerWithCountedReadings(8);
    const stop = new AbortController();
    const first = countJob(broker);
    first.on('published', () => stop.abort());
    expect((await first.run({ signal: stop.signal })).results).toBeGreaterThan(0);
    await countJob(broker).run({ untilCaughtUp: true });
    expect(targetBytes(broker)).toEqual(await uninterrupted(8));
  });

  it('runs again after a run that ended on an error', async () => {
    const broker = brokerWithCountedReadings(8);
    const inner = broker.target('target', { producer: 'p' });
    let publishes = 0;
    const refusing = {
      ...forwarding(inner),
      publish: (id: bigint, messages: readonly Uint8Array[]) =>
        ++publishes === 4
          ? Promise.reject(new PublishError('target', id, false, 'refused for the test'))
          : inner.publish(id, messages),
    };
    await expect(countJob(broker, refusing).run({ untilCaughtUp: true })).rejects.toThrow(
      'refused for the test',
    );
    expect(broker.messages('target')).toHaveLength(3);
    await countJob(broker).run({ untilCaughtUp: true });
    expect(targetBytes(broker)).toEqual(await uninterrupted(8));
  });

  it('lets a partitioned job run again, its loops building their targets anew', async () => {
    const broker = ordersBroker(3, 2);
    const job = ordersJob(broker, { singleActive: false });
    await job.run({ untilCaughtUp: true });
    appendOrders(broker, 'orders-1', 1, 2, 2);
    const again = await job.run({ untilCaughtUp: true });
    expect(again.partitions.map((p) => p.results)).toEqual([0, 2, 0]);

    const whole = ordersBroker(3, 2);
    appendOrders(whole, 'orders-1', 1, 2, 2);
    await ordersJob(whole, { singleActive: false }).run({ untilCaughtUp: true });
    expect(rollupsByProducer(broker)).toEqual(rollupsByProducer(whole));
  });
});
