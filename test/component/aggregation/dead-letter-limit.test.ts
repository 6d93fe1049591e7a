import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  DeadLetterLimitError,
  jsonMessage,
  OutputTooLargeError,
  readResults,
  writeId,
  type DecodedResult,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import {
  brokerWithReadings,
  reading,
  results,
  T0,
  type Reading,
} from '../../support/jobs/memory-job.js';

/** Readings whose sensor is missing, so a key function reading it returns undefined. */
const unkeyed = (count: number, fromSecond: number): Reading[] =>
  Array.from(
    { length: count },
    (_, i) => ({ ...reading('x', i, fromSecond + i), sensor: undefined }) as unknown as Reading,
  );

function keyedJob(broker: MemoryBroker, maxDeadLetters?: number) {
  return aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((r) => r.sensor)
    .onError('dead-letter', maxDeadLetters === undefined ? undefined : { maxDeadLetters })
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'p' }));
}

describe('the dead letters of one step', () => {
  it('should stop the job with a DeadLetterLimitError when every message fails', async () => {
    const broker = brokerWithReadings(unkeyed(50, 0));
    const running = keyedJob(broker, 10).run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(DeadLetterLimitError);
    await expect(running).rejects.toMatchObject({
      stream: 'source',
      firstOffset: 0n,
      offset: 10n,
      limit: 10,
      stage: 'key',
    });
    await expect(running).rejects.toThrow(
      /^the step from offset 0 of stream 'source' would hold more than 10 dead letters: key failed for the message at offset 10 too: key must be a string or a finite number, got undefined; nothing of the step was published\. So many failures usually mean a bug in the job's decode, event-time or key function/,
    );
    expect(results(broker)).toEqual([]);
  });

  it('should hold at most 1,000 by default', async () => {
    const broker = brokerWithReadings(unkeyed(1_001, 0), { chunkSize: 100 });
    await expect(keyedJob(broker).run({ untilCaughtUp: true })).rejects.toMatchObject({
      name: 'DeadLetterLimitError',
      offset: 1_000n,
      limit: 1_000,
    });
  });

  it('should publish the steps completed before the flood', async () => {
    const broker = brokerWithReadings([
      reading('a', 1, 0),
      reading('b', 2, 1),
      reading('a', 3, 61), // closes the first minute: its step is complete
      ...unkeyed(20, 62),
    ]);
    await expect(keyedJob(broker, 5).run({ untilCaughtUp: true })).rejects.toMatchObject({
      name: 'DeadLetterLimitError',
      firstOffset: 2n,
      offset: 8n,
    });
    expect(results(broker).map((r) => [r.lastOffset, r.outputs.length])).toEqual([[1n, 2]]);
  });

  it('should publish a step holding exactly the bound', async () => {
    const broker = brokerWithReadings([...unkeyed(3, 0), reading('a', 1, 4), reading('a', 2, 61)]);
    await keyedJob(broker, 3).run({ untilCaughtUp: true });
    const [step] = results(broker);
    expect(step?.deadLetters.map((d) => [d.offset, d.stage])).toEqual([
      [0n, 'key'],
      [1n, 'key'],
      [2n, 'key'],
    ]);
    expect(step?.outputs.map((o) => o.value)).toEqual([1]);
  });

  it('should publish a step whose dead letters are too large for one write whole, over several writes', async () => {
    const broker = new MemoryBroker({ now: () => T0, frameMax: 4_096 });
    broker.createStream('source');
    broker.createStream('target');
    broker.append(
      'source',
      Array.from({ length: 10 }, () => jsonMessage({ pad: 'x'.repeat(500) })),
    );
    const summary = await aggregate<{ pad: string }>(broker.source('source'))
      .count(10)
      .key(() => Number.NaN)
      .onError('dead-letter')
      .reduce((n) => n + 1, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    expect(summary.results).toBe(1);
    // Each dead letter carries its whole source message: 10 of them do not fit one write.
    const chunks = broker.chunks('target');
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.map((chunk) => chunk.writer?.publishingId)).toEqual(
      chunks.map((_, write) => writeId(9n, write, chunks.length)),
    );
    const read: DecodedResult[] = [];
    for await (const { result } of readResults(broker.source('target'), { untilCaughtUp: true })) {
      read.push(result);
    }
    expect(read).toHaveLength(1);
    expect(read[0]).toMatchObject({ firstOffset: 0n, lastOffset: 9n, messages: 10, outputs: [] });
    expect(read[0]?.deadLetters.map((d) => [d.offset, d.stage])).toEqual(
      Array.from({ length: 10 }, (_, i) => [BigInt(i), 'key']),
    );
  });

  it('should name a dead letter alone too large for one write, publishing nothing', async () => {
    const broker = new MemoryBroker({ now: () => T0, frameMax: 4_096 });
    broker.createStream('source');
    broker.createStream('target');
    broker.append('source', [jsonMessage({ pad: 'x'.repeat(5_000) })]);
    const running = aggregate<{ pad: string }>(broker.source('source'))
      .count(1)
      .key(() => Number.NaN)
      .onError('dead-letter')
      .reduce((n) => n + 1, 0)
      .to(broker.target('target', { producer: 'p' }))
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toBeInstanceOf(OutputTooLargeError);
    await expect(running).rejects.toMatchObject({
      holds: 'dead-letter',
      firstOffset: 0n,
      lastOffset: 0n,
    });
    await expect(running).rejects.toThrow(
      /^result of offsets 0\.\.0 of stream 'source' needs a write of \d+ bytes, over the target's limit of \d+ bytes per write; nothing was published: one dead letter alone \(a whole source message and its error\) is larger than a write: raise the broker's frame_max, or fix what makes it fail$/,
    );
    expect(broker.chunks('target')).toEqual([]);
  });

  it.each([0, 1.5, -1, Number.NaN])('should reject maxDeadLetters %s', (maxDeadLetters) => {
    expect(() =>
      aggregate(brokerWithReadings([]).source('source')).onError('dead-letter', { maxDeadLetters }),
    ).toThrow(`maxDeadLetters must be a positive integer, given: ${maxDeadLetters}`);
  });

  it("should reject options given with the 'stop' policy", () => {
    const builder = aggregate(brokerWithReadings([]).source('source'));
    expect(() => builder.onError('stop', { maxDeadLetters: 5 })).toThrow(ConfigError);
  });
});
