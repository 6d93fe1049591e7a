// jobMetrics over RabbitMQ: the lag comes from the real source's endOffset at the scrape.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { aggregate, jsonMessage } from '../../src/index.js';
import { jobMetrics } from '../../src/metrics/index.js';
import { reading, type Reading } from '../support/jobs/memory-job.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

const messages = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => jsonMessage(reading('a', from + i, from + i)));

describe('the metrics of a job on RabbitMQ', () => {
  it('should report the backlog the job has not read as its source lag', async () => {
    const source = await real.newStream('metrics-in');
    const results = await real.newStream('metrics-out');
    const read = 6;
    await publishAll(real.rabbit, source, messages(0, read));
    const target = real.rabbit.target(results, { producer: 'job' });
    const job = aggregate<Reading>(real.rabbit.source(source))
      .count(1)
      .reduce((total, r) => total + r.value, 0)
      .to(target, { retryDelayMs: 0 });
    const registry = new Registry();
    const metrics = jobMetrics(job, { registry, labels: { job_name: 'lag' }, lagCacheMs: 0 });
    try {
      await job.run({ untilCaughtUp: true });
      const backlog = 4;
      await publishAll(real.rabbit, source, messages(read, backlog));
      const text = await registry.metrics();
      expect(text).toContain(`stream_windows_source_lag_messages{job_name="lag"} ${backlog}\n`);
      expect(text).toContain(`stream_windows_steps_published_total{job_name="lag"} ${read}\n`);
      expect(text).toContain(`stream_windows_last_published_offset{job_name="lag"} ${read - 1}\n`);
    } finally {
      metrics.close();
      await target.close();
    }
  });
});
