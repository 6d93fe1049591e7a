// jobStatus over the ports, on the embedded broker: chunk timestamps are set by the test, so
// the lag in time is known exactly.
import { describe, expect, it } from 'vitest';
import { jsonMessage, lastWriteId } from '../../../src/index.js';
import { jobStatus } from '../../../src/cli/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';

const T0 = Date.UTC(2026, 0, 1);

/** A 'source' of three chunks of four messages, written at T0, T0 + 2 s and T0 + 7 s. */
function brokerWithBacklog(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('source');
  broker.createStream('target');
  for (const [chunk, at] of [0, 2_000, 7_000].entries()) {
    const messages = Array.from({ length: 4 }, (_, i) => jsonMessage({ n: 4 * chunk + i }));
    broker.append('source', messages, { timestamp: T0 + at });
  }
  return broker;
}

const result = jsonMessage({ result: true });

describe('jobStatus', () => {
  it('should measure the lag from the chunk holding the resume point to the last chunk', async () => {
    const broker = brokerWithBacklog();
    await broker.target('target', { producer: 'job' }).publish(lastWriteId(5n), [result]);
    const status = await jobStatus(
      broker.source('source'),
      broker.target('target', { producer: 'job' }),
    );
    expect(status).toEqual({
      source: 'source',
      target: 'target',
      producer: 'job',
      lastPublishingId: lastWriteId(5n),
      lastOffset: 5n,
      published: true,
      resumeFrom: 6n,
      sourceEnd: 12n,
      lagMessages: 6n,
      lagMs: 5_000,
      resumeChunkTime: T0 + 2_000,
      lastChunkTime: T0 + 7_000,
    });
  });

  it("should resume from 'first' and count the whole stream for a producer that never published", async () => {
    const broker = brokerWithBacklog();
    const status = await jobStatus(
      broker.source('source'),
      broker.target('target', { producer: 'new' }),
    );
    expect(status).toMatchObject({
      lastPublishingId: 0n,
      resumeFrom: 'first',
      lagMessages: 12n,
      lagMs: 7_000,
      resumeChunkTime: T0,
    });
  });

  it('should tell a producer that never published from one whose last result, written by an earlier version, is for offset 0', async () => {
    const broker = brokerWithBacklog();
    // An earlier version published a step under its last offset: offset 0 under id 0.
    await broker.target('target', { producer: 'job' }).publish(0n, [result]);
    const ask = (producer: string) =>
      jobStatus(broker.source('source'), broker.target('target', { producer }));
    // Both answer a last publishing id of 0; only one of them ever published.
    expect(await ask('jbo')).toMatchObject({
      lastPublishingId: 0n,
      published: false,
      resumeFrom: 'first',
      lagMessages: 12n,
    });
    expect(await ask('job')).toMatchObject({
      lastPublishingId: 0n,
      published: true,
      resumeFrom: 1n,
      lagMessages: 11n,
    });
  });

  it('should report no lag and read no chunk for a job that is caught up', async () => {
    const broker = brokerWithBacklog();
    await broker.target('target', { producer: 'job' }).publish(lastWriteId(11n), [result]);
    const status = await jobStatus(
      broker.source('source'),
      broker.target('target', { producer: 'job' }),
    );
    expect(status).toMatchObject({
      resumeFrom: 12n,
      sourceEnd: 12n,
      lagMessages: 0n,
      lagMs: 0,
      resumeChunkTime: undefined,
      lastChunkTime: undefined,
    });
  });
});
