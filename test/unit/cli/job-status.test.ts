// jobStatus over the ports, on the embedded broker: chunk timestamps are set by the test, so
// the lag in time is known exactly.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  jsonMessage,
  lastWriteId,
  mergeInputs,
  type Source,
} from '../../../src/index.js';
import { jobStatus, requestSkip } from '../../../src/cli/index.js';
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

describe('status and skip given a source the job does not read', () => {
  /** A job over `inputs` (merged when several) that published its results to 'totals'. */
  async function publishedOver(inputs: readonly string[]): Promise<MemoryBroker> {
    const broker = new MemoryBroker({ now: () => T0 });
    for (const stream of [...inputs, 'other', 'totals']) broker.createStream(stream);
    for (const stream of [...inputs, 'other']) {
      broker.append(
        stream,
        [0, 1_500, 3_000].map((at) => jsonMessage({ at })),
      );
    }
    const sources = inputs.map((stream) => broker.source(stream));
    const readings =
      sources.length === 1
        ? aggregate<{ at: number }>(sources[0] as Source)
        : aggregate<{ at: number }>(mergeInputs(sources));
    await readings
      .eventTime((reading) => reading.at)
      .tumbling(1_000, { grace: 0 })
      .reduce((n) => n + 1, 0)
      .to(broker.target('totals', { producer: 'job' }))
      .run({ untilCaughtUp: true });
    expect(broker.messages('totals').length).toBeGreaterThan(0);
    return broker;
  }

  it('refuses another stream than the one the results were read from, naming it', async () => {
    const broker = await publishedOver(['readings']);
    const target = broker.target('totals', { producer: 'job' });
    const asked = jobStatus(broker.source('other'), target);
    await expect(asked).rejects.toThrow(ConfigError);
    await expect(asked).rejects.toThrow(
      "source must be the stream the job reads: the last result of producer 'job' on 'totals' was read from 'readings', given: 'other'",
    );
    await expect(jobStatus(broker.source('readings'), target)).resolves.toMatchObject({
      lastOffset: 2n,
    });
  });

  it('refuses each input of a job over several inputs, status and skip alike', async () => {
    const broker = await publishedOver(['a', 'b']);
    const target = broker.target('totals', { producer: 'job' });
    const why = /reads several inputs \(merge\(a,b\)\), whose offsets are merged positions/;
    await expect(jobStatus(broker.source('a'), target)).rejects.toThrow(why);
    await expect(requestSkip(broker.source('b'), target, 0n)).rejects.toThrow(why);
  });
});
