// The runner's edges that no property reaches: a live job restarted after it published, an
// empty source, and a write exactly as large as the target accepts.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  maxWriteBytes,
  writeSize,
  DEFAULT_FRAME_MAX,
  type Source,
  type Target,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  T0,
  type Reading,
} from '../../support/jobs/memory-job.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';

const sum = (acc: number, r: Reading) => acc + r.value;

/** `target`, calling `resumed` once the job read its resume point and `published(n)` after its n-th confirm. */
function watched(
  target: Target,
  hooks: { resumed: () => void; published: (n: number) => void },
): Target {
  let confirms = 0;
  return {
    ...forwarding(target),
    lastPublishingId: async () => {
      const last = await target.lastPublishingId();
      hooks.resumed();
      return last;
    },
    publish: async (id, messages) => {
      await target.publish(id, messages);
      hooks.published(++confirms);
    },
  };
}

describe('the runner', () => {
  it('should resume a live job that already published and keep publishing what arrives', async () => {
    const broker = brokerWithReadings([reading('a', 1, 0), reading('a', 2, 1), reading('a', 3, 2)]);
    const job = (target: Target) =>
      aggregate<Reading>(broker.source('source')).count(1).reduce(sum, 0).to(target);
    await job(broker.target('target', { producer: 'p' })).run({ untilCaughtUp: true }); // ids 0..2
    const append = (r: Reading) => broker.append('source', [jsonMessage(r, { creationTime: r.t })]);
    const controller = new AbortController();
    const target = watched(broker.target('target', { producer: 'p' }), {
      resumed: () => append(reading('a', 4, 3)),
      // A live job does not stop at the end it met: the next message arrives after its first result.
      published: (n) => (n === 1 ? append(reading('a', 5, 4)) : controller.abort()),
    });
    const summary = await job(target).run({ signal: controller.signal });
    expect(summary.results).toBe(2);
    expect(results(broker).map((r) => r.outputs[0]?.value)).toEqual([1, 2, 3, 4, 5]);
  });

  it('should not read an empty source when running until caught up', async () => {
    const broker = brokerWithReadings([]);
    const empty = broker.source('source');
    const source: Source = {
      stream: empty.stream,
      endOffset: () => empty.endOffset(),
      read: () => {
        throw new Error('an empty source must not be read until caught up');
      },
    };
    const summary = await aggregate<Reading>(source)
      .count(1)
      .reduce(sum, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    expect(summary).toEqual({ results: 0, duplicates: 0, restarts: 0 });
  });

  it('should publish a result whose write is exactly as large as the target accepts', async () => {
    const readings = [reading('a', 1, 0), reading('a', 2, 61)];
    const job = (broker: MemoryBroker) =>
      aggregate<Reading>(broker.source('source'))
        .tumbling('1m')
        .reduce(sum, 0)
        .to(broker.target('target', { producer: 'p' }))
        .run({ untilCaughtUp: true });
    const measured = brokerWithReadings(readings);
    await job(measured);
    const size = writeSize(measured.messages('target').map((m) => m.bytes));
    // A frame_max that leaves room for exactly this write.
    const frameMax = size + DEFAULT_FRAME_MAX - maxWriteBytes(DEFAULT_FRAME_MAX);
    const exact = new MemoryBroker({ now: () => T0, frameMax });
    exact.createStream('source');
    exact.createStream('target');
    exact.append(
      'source',
      readings.map((r) => jsonMessage(r, { creationTime: r.t })),
      { timestamp: T0 },
    );
    expect(exact.target('target', { producer: 'p' }).maxWriteBytes).toBe(size);
    await expect(job(exact)).resolves.toMatchObject({ results: 1 });
    expect(results(exact)).toHaveLength(1);
  });
});
