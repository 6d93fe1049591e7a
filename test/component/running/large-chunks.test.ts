// A chunk can hold thousands of messages (RabbitMQ stores a producer's pipelined writes
// together: 16,000 in the failover bench). The run loop processes it in slices and lets the
// event loop turn once it held it for a while, so that a result decided early in the chunk is
// published, and its confirm read, while the rest is processed; what it publishes is the same.
import { describe, expect, it } from 'vitest';
import { aggregate, type Target } from '../../../src/index.js';
import type { MemoryBroker } from '../../../src/memory/index.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { brokerWithReadings, T0, type Reading } from '../../support/jobs/memory-job.js';

const MESSAGES = 5_000;
const readings: Reading[] = Array.from({ length: MESSAGES }, (_, i) => ({
  sensor: `s${i % 7}`,
  value: i,
  t: T0 + i,
}));

/** Sums every 10 readings; `seen` is called on each message, before it is counted. */
function sumsOfTen(broker: MemoryBroker, target: Target, seen: () => void = () => undefined) {
  return aggregate<Reading>(broker.source('source'))
    .filter(() => {
      seen();
      return true;
    })
    .count(10)
    .reduce((sum, reading) => sum + reading.value, 0)
    .to(target, { retryDelayMs: 0 });
}

const storedBytes = (broker: MemoryBroker): Uint8Array[] =>
  broker.messages('target').map((message) => message.bytes);

describe('a job reading one chunk of 5,000 messages', () => {
  it('publishes the result of its first 10 messages before it processes the chunk whole, and the same bytes as over small chunks', async () => {
    const broker = brokerWithReadings(readings, { chunkSize: MESSAGES });
    let processed = 0;
    const processedAtPublish: number[] = [];
    const target = broker.target('target', { producer: 'p' });
    const watched: Target = {
      ...forwarding(target),
      publish: (id, messages) => {
        processedAtPublish.push(processed);
        return target.publish(id, messages);
      },
    };
    const summary = await sumsOfTen(broker, watched, () => processed++).run({
      untilCaughtUp: true,
    });
    expect(summary.results).toBe(MESSAGES / 10);
    // Published after the first slice of 1,000 messages: before the change, after all 5,000.
    expect(processedAtPublish[0]).toBeLessThanOrEqual(1_000);

    const small = brokerWithReadings(readings);
    await sumsOfTen(small, small.target('target', { producer: 'p' })).run({ untilCaughtUp: true });
    expect(storedBytes(broker)).toEqual(storedBytes(small));
  });

  it('lets the event loop turn while it processes the chunk', async () => {
    const broker = brokerWithReadings(readings, { chunkSize: MESSAGES });
    let processed = 0;
    // ~20 µs a message: 100 ms for the chunk, ten times the longest hold of the event loop.
    const slow = (): void => {
      processed++;
      const until = performance.now() + 0.02;
      while (performance.now() < until);
    };
    const processedAtTurns: number[] = [];
    const tick = (): void => {
      processedAtTurns.push(processed);
      immediate = setImmediate(tick);
    };
    let immediate = setImmediate(tick);
    try {
      await sumsOfTen(broker, broker.target('target', { producer: 'p' }), slow).run({
        untilCaughtUp: true,
      });
    } finally {
      clearImmediate(immediate);
    }
    // Turns in the middle of the chunk: none before the change (one chunk, processed at once).
    const midChunk = processedAtTurns.filter((count) => count > 0 && count < MESSAGES);
    expect(midChunk.length).toBeGreaterThanOrEqual(2);
  });
});
