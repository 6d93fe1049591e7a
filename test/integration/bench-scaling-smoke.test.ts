import { describe, expect, inject, it } from 'vitest';
import { RABBITMQ_PARTITIONS, rabbitScalingCases } from '../../bench/scaling.js';
import { expectRatioRanges } from '../support/bench/ratio-ranges.js';

// The scaling case's RabbitMQ part at a tiny size (the embedded part runs in
// test/unit/bench/bench-smoke.test.ts). Nothing here asserts a timing.
describe('bench smoke, scaling on RabbitMQ', () => {
  it("gives the job's CPU per message with 1, 2 and 4 partitions, and the broker's or why not", async () => {
    // 2,000 messages per partition at 4 partitions: each closes a 1-second window.
    const results = await rabbitScalingCases(inject('rabbitmqUrl'), 8_000, 1);

    expect(results.map((result) => result.name)).toEqual(
      RABBITMQ_PARTITIONS.map((partitions) => `scaling/rabbitmq/${partitions}-partitions`),
    );
    for (const result of results) {
      expect(result.values?.cpuUsPerMsg).toBeGreaterThan(0);
      expect(result.values?.cpuUsPerMsgMin).toBeLessThanOrEqual(result.values?.cpuUsPerMsgMax ?? 0);
      expect(result.msgsPerSecMin).toBeLessThanOrEqual(result.msgsPerSecMax ?? 0);
      if (result.values?.brokerCpuUsPerMsg === undefined) {
        expect(result.notes?.join('\n')).toContain('broker CPU: not measured (');
      } else {
        expect(result.values.brokerShareOfCpu).toBeGreaterThanOrEqual(0);
        expect(result.values.brokerShareOfCpu).toBeLessThanOrEqual(1);
      }
    }
    expect(results[0]?.values?.cpuPerMsgOverOnePartition).toBe(1);
    expect(Object.keys(results[2]?.ratios ?? {})).toEqual(['onePartition']);
    expectRatioRanges(results);
  });
});
