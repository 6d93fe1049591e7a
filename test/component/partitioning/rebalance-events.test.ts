// A rebalance as a job's observers see it on the embedded broker: standing by in a group, being
// told to step down, answering; and the metrics that count them. The same rebalance on RabbitMQ
// (test/integration/rabbitmq-rebalance-events.test.ts) must tell the same.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  PublishError,
  type Source,
  type Target,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { jobMetrics } from '../../../src/metrics/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { reading, type Reading } from '../../support/jobs/memory-job.js';
import { JOB, ordersBroker, ordersJob } from '../../support/jobs/partitioned-job.js';
import { expectRebalanceEvents, rebalance } from '../../support/jobs/rebalance.js';

const sumJob = (source: Source, broker: MemoryBroker) =>
  aggregate<Reading>(source)
    .count(1)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });

/** A metric's value for the series of `labels`; undefined when it has no such series. */
async function valueOf(
  registry: Registry,
  name: string,
  labels: Record<string, string>,
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (metric === undefined) return undefined;
  const { values } = await metric.get();
  const wanted = Object.entries(labels);
  return values.find((v) => wanted.every(([key, value]) => v.labels[key] === value))?.value;
}

/** Resolves once `check` holds, checked every 5 ms; fails after 10 s. */
async function eventually(check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('gave up waiting after 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('a rebalance, as the job tells it', () => {
  it('tells standby, started, stepDown (with what the answer waits for), deactivated and standby again, per partition, in order', async () => {
    // 4 chunks of 3 per partition, summed by 3: each partition's last result is offset 11.
    const broker = ordersBroker(2, 4);
    const run = await rebalance(() => ordersJob(broker), 11n, 10_000);
    expectRebalanceEvents(run, ['orders-0', 'orders-1'], JOB, 11n);
  });

  it('tells a step-down before the confirms under way land, and its answer after them', async () => {
    const broker = new MemoryBroker();
    const [, partition = ''] = broker.createSuperStream('s', { partitions: 2 });
    broker.createStream('target');
    broker.append(partition, [jsonMessage(reading('a', 1, 0))]);
    const order: unknown[] = [];
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const inner = broker.target('target', { producer: 'p' });
    const target: Target = {
      ...forwarding(inner),
      publish: async (id, messages) => {
        order.push('publish');
        await held;
        await inner.publish(id, messages);
        order.push('confirmed');
      },
    };
    const job = aggregate<Reading>(broker.source(partition, { singleActive: { name: 'job' } }))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(target, { retryDelayMs: 0 });
    for (const name of ['standby', 'stepDown', 'deactivated'] as const) {
      job.on(name, (event) => order.push([name, event]));
    }
    job.on('started', () => order.push('started'));
    const told = (name: string) => order.some((entry) => Array.isArray(entry) && entry[0] === name);
    const stop = new AbortController();
    const running = job.run({ signal: stop.signal });
    await eventually(() => order.includes('publish'));
    // A second member takes partition 1 (1 rem 2): the job is told to step down at once.
    const other = broker.singleActive(partition, {
      name: 'job',
      resumeFrom: () => Promise.resolve('first' as const),
    });
    await eventually(() => told('stepDown'));
    expect(told('deactivated')).toBe(false);
    release();
    await eventually(() => told('deactivated') && order.length === 7);
    const group = { stream: partition, group: 'job' };
    expect(order).toEqual([
      ['standby', group],
      'started',
      'publish',
      ['stepDown', { ...group, nextOffset: 1n, inFlight: 1 }],
      'confirmed',
      ['deactivated', { stream: partition, nextOffset: 1n }],
      ['standby', group],
    ]);
    await other.close();
    stop.abort();
    await running;
  });

  it('stands by again after a restart: a retriable error leaves the group, and the job joins again', async () => {
    const broker = new MemoryBroker();
    broker.createStream('source');
    broker.createStream('target');
    broker.append('source', [jsonMessage(reading('a', 1, 0)), jsonMessage(reading('a', 2, 1))]);
    const inner = broker.target('target', { producer: 'p' });
    let publishes = 0;
    const target: Target = {
      ...forwarding(inner),
      publish: async (id, messages) => {
        if (++publishes === 1) throw new PublishError('target', id, true, 'lost');
        await inner.publish(id, messages);
      },
    };
    const job = aggregate<Reading>(broker.source('source', { singleActive: { name: 'job' } }))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(target, { retryDelayMs: 0 });
    const names: string[] = [];
    for (const name of ['standby', 'started', 'restart', 'stepDown', 'deactivated'] as const) {
      job.on(name, () => names.push(name));
    }
    const stop = new AbortController();
    job.on('published', (event) => event.lastOffset === 1n && stop.abort());
    await job.run({ signal: stop.signal });
    expect(names).toEqual(['standby', 'started', 'restart', 'standby', 'started']);
    expect(broker.consumerGroup('source', 'job').members).toEqual([]);
  });

  it('shows in the metrics: the active gauge follows the group, step-downs are counted, and a job without a group has neither', async () => {
    const broker = new MemoryBroker();
    const [, partition = ''] = broker.createSuperStream('s', { partitions: 2 });
    broker.createStream('target');
    const registry = new Registry();
    const a = sumJob(broker.source(partition, { singleActive: { name: 'job' } }), broker);
    const b = sumJob(broker.source(partition, { singleActive: { name: 'job' } }), broker);
    const plain = sumJob(broker.source(partition), broker);
    jobMetrics(a, { registry, labels: { instance: 'a' } });
    jobMetrics(b, { registry, labels: { instance: 'b' } });
    jobMetrics(plain, { registry, labels: { instance: 'plain' } });
    const active = (instance: string) =>
      valueOf(registry, 'stream_windows_source_active', { instance });
    const stepDowns = (instance: string) =>
      valueOf(registry, 'stream_windows_step_downs_total', { instance });

    // Before any event there is no group to tell of: no series.
    expect(await active('a')).toBeUndefined();
    const stopA = new AbortController();
    const stopB = new AbortController();
    const runA = a.run({ signal: stopA.signal });
    await eventually(async () => (await active('a')) === 1);
    expect(await stepDowns('a')).toBe(0);
    // B joins: partition 1 rem 2 members picks B; A steps down and stands by.
    const runB = b.run({ signal: stopB.signal });
    await eventually(async () => (await active('b')) === 1);
    expect([await active('a'), await stepDowns('a'), await stepDowns('b')]).toEqual([0, 1, 0]);
    // B leaves: A is active again, its step-downs stay counted.
    stopB.abort();
    await runB;
    await eventually(async () => (await active('a')) === 1);
    expect([await active('b'), await stepDowns('a'), await stepDowns('b')]).toEqual([0, 1, 0]);
    stopA.abort();
    await runA;
    expect(await active('a')).toBe(0);
    await plain.run({ untilCaughtUp: true });
    expect(await active('plain')).toBeUndefined();
    expect(await stepDowns('plain')).toBeUndefined();
  });
});
