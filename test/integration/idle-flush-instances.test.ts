// Two instances of one job with an idle flush on RabbitMQ, reading one stream as a single
// active consumer group: the broker activates one at a time, and each handover (the active one
// stops, the standby is activated) leaves what one instance with the same flushes publishes.
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { jsonMessage } from '../../src/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
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
} from '../support/jobs/idle-flush-instances.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { expectEveryMessageCountedOnce, stepsOf } from '../support/results/target-stream.js';

const real = rabbitForTests();

/** `steps` with two instances on fresh streams, each flushing after 50 ms of silence. */
async function runTwo(jobOf: JobOf, steps: readonly Step[]) {
  const source = await real.newStream('idle-flush-source');
  const target = await real.newStream('idle-flush-target');
  const feeder = real.rabbit.target(source, { producer: `feeder-${randomUUID()}` });
  let id = 0n;
  // An instance is a process of its own: RabbitMQ refuses a producer name declared twice on
  // one connection.
  const connections = await Promise.all([0, 1].map(() => connect(inject('rabbitmqUrl'))));
  const world: FlushWorld = {
    source: () => real.rabbit.source(source, { singleActive: { name: GROUP } }),
    target: (producer, instance) =>
      (connections[instance] as RabbitMQ).target(target, { producer }),
    append: (reading) => feeder.publish(id++, [jsonMessage(reading)]),
    stored: () => readAll(real.rabbit, target),
  };
  try {
    return await runInstances(world, jobOf, steps, { instances: 2, idleMs: 50 });
  } finally {
    await feeder.close();
    await Promise.all(connections.map((connection) => connection.close()));
  }
}

describe('an idle flush with two instances of one job reading as a single active consumer on RabbitMQ', () => {
  it('is exact through handovers for step windows', async () => {
    const { stored, published } = await runTwo(dailyJob, DAILY.steps);
    expect(stored.map(shapeOf)).toEqual(DAILY.results);
    expect(published).toEqual(DAILY.published);
    expectEveryMessageCountedOnce(stepsOf(stored));
  });

  it('is exact through handovers for event-time windows', async () => {
    const { stored, published } = await runTwo(countsJob, COUNTS.steps);
    expect(published).toEqual(COUNTS.published);
    expect(countedPerWindow(stored)).toEqual(COUNTS.counted);
  });
});
