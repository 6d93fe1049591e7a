// A rebalance on the real broker as a job's observers see it: two instances of a partitioned
// job share a two-partition super stream through RabbitMQ's single active consumer groups, and
// tell the same events, in the same order and with the same figures, as the embedded broker
// does for the same rebalance (test/component/partitioning/rebalance-events.test.ts).
import { afterAll, describe, it } from 'vitest';
import { publishAll, rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { JOB, reading, readingsJob } from '../support/jobs/readings-job.js';
import { expectRebalanceEvents, rebalance } from '../support/jobs/rebalance.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const superStreams: string[] = [];
afterAll(async () => {
  for (const name of superStreams) await real.rabbit.deleteSuperStream(name);
});

describe('a rebalance on RabbitMQ, as the job tells it', () => {
  it(
    'tells standby, started, stepDown, deactivated and standby again per partition, as the embedded broker does',
    async () => {
      const name = uniqueStream('rebalance');
      superStreams.push(name);
      const partitions = await real.rabbit.createSuperStream(name, { partitions: 2 });
      const target = await real.newStream('rebalance-target');
      // 12 messages per partition, summed by 3: each partition's last result is offset 11.
      for (const [p, partition] of partitions.entries()) {
        await publishAll(
          real.rabbit,
          partition,
          Array.from({ length: 12 }, (_, i) => reading(p, i)),
        );
      }
      const instance = () =>
        readingsJob(real.rabbit.superStreamSource(name, { singleActive: { name: JOB } }), (p) =>
          real.rabbit.target(target, { producer: p.producer }),
        );
      const run = await rebalance(instance, 11n, 30_000);
      expectRebalanceEvents(run, partitions, JOB, 11n);
    },
    bound(120_000),
  );
});
