// An operator's way past a poison message under onError('stop') (`stream-windows skip`): the
// job stops at offset N, a skip request for N is stored on the source, and the next start
// dead-letters N through the normal result. Each target is compared byte for byte with an
// uninterrupted run that had the request from the start.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  fromResults,
  jsonMessage,
  lastWriteId,
  ProcessingError,
  SourceError,
  superStreamTarget,
  type StandardSchemaV1,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { skipReference, stopReference } from '../../../src/engine/skip-request.js';
import { keepingLogger } from '../../support/doubles/keeping-logger.js';

const POISON = new TextEncoder().encode('not json');

/** A broker whose 'source' holds `values` (null: a poison message), one message per chunk. */
function brokerWith(values: readonly ({ n: number; t?: number } | null)[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => Date.UTC(2026, 0, 1) });
  broker.createStream('source');
  broker.createStream('target');
  for (const value of values) {
    broker.append('source', [value === null ? POISON : jsonMessage(value)]);
  }
  return broker;
}

const requestSkip = (broker: MemoryBroker, offset: bigint) =>
  broker.source('source').storeOffset(skipReference('target', 'p'), offset);

const stored = (broker: MemoryBroker) => broker.messages('target').map((m) => m.bytes);

/** Runs `job` until caught up; the ProcessingError it stopped with, or undefined. */
async function runJob(job: { run(o: { untilCaughtUp: true }): Promise<unknown> }) {
  try {
    await job.run({ untilCaughtUp: true });
    return undefined;
  } catch (error) {
    if (error instanceof ProcessingError) return error;
    throw error;
  }
}

describe('stepping over a poison message', () => {
  // count(3): steps 0..2, 3..5, 6..8; offset 4 is poison, so when it stops the job the step
  // 3.. is open in memory only (the last publishing id is 2).
  const values = [0, 1, 2, 3, null, 5, 6, 7, 8, 9].map((n) => (n === null ? null : { n }));
  const stepJob = (broker: MemoryBroker, onError: 'stop' | 'dead-letter' = 'stop') =>
    aggregate<{ n: number }>(broker.source('source'))
      .onError(onError)
      .count(3)
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });

  it('should dead-letter the requested offset of a step job once, with the open step before it', async () => {
    const reference = brokerWith(values);
    await requestSkip(reference, 4n);
    expect(await runJob(stepJob(reference))).toBeUndefined();

    const broker = brokerWith(values);
    const stop = await runJob(stepJob(broker));
    expect(stop).toMatchObject({ stream: 'source', offset: 4n, stage: 'decode' });
    expect(await broker.target('target', { producer: 'p' }).lastPublishingId()).toBe(
      lastWriteId(2n),
    );
    // Every restart stops there again, a request for another offset as well.
    await requestSkip(broker, 3n);
    expect(await runJob(stepJob(broker))).toMatchObject({ offset: 4n });
    await requestSkip(broker, 4n);
    expect(await runJob(stepJob(broker))).toBeUndefined();

    expect(stored(broker)).toEqual(stored(reference));
    const decoded = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(decoded.map((r) => [r.firstOffset, r.lastOffset, r.outputs[0]?.value])).toEqual([
      [0n, 2n, 3],
      [3n, 5n, 8],
      [6n, 8n, 21],
    ]);
    expect(decoded[1]?.deadLetters).toEqual([
      {
        offset: 4n,
        stage: 'decode',
        error: expect.stringMatching(/^skipped by operator \(stream-windows skip\): /),
        message: expect.any(Uint8Array),
      },
    ]);
    expect(decoded.flatMap((r) => r.deadLetters)).toHaveLength(1);
  });

  it("should leave a job under onError('dead-letter') as it was", async () => {
    const broker = brokerWith(values);
    await requestSkip(broker, 4n);
    const job = stepJob(broker, 'dead-letter');
    expect(await runJob(job)).toBeUndefined();
    const [letter] = broker.messages('target').flatMap((m) => decodeResult(m.bytes).deadLetters);
    expect(letter?.error).not.toMatch(/skipped by operator/);
  });

  // Tumbling 10 ms windows with 5 ms grace over event times t. Offset 3 closes [0,10) with
  // [10,20) open since offset 2; offset 7 closes [10,20) with [20,30) open since offset 4. So
  // the result before poison 5 resumes at 2, and the one after it at 4: a restart re-reads 5.
  const timed: ({ n: number; t: number } | null)[] = [
    { n: 0, t: 0 },
    { n: 1, t: 5 },
    { n: 2, t: 12 },
    { n: 3, t: 16 },
    { n: 4, t: 22 },
    null,
    { n: 6, t: 26 },
    { n: 7, t: 27 },
    null,
    { n: 9, t: 35 },
    { n: 10, t: 47 },
  ];
  const eventTimeJob = (broker: MemoryBroker) =>
    aggregate<{ n: number; t: number }>(broker.source('source'))
      .eventTime((v) => v.t)
      .tumbling('10ms', { grace: '5ms' })
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });

  it('should replay a skipped message of an event-time job the same way after a later stop', async () => {
    const reference = brokerWith(timed);
    await requestSkip(reference, 8n);
    expect(await runJob(eventTimeJob(reference))).toBeUndefined();

    const broker = brokerWith(timed);
    expect(await runJob(eventTimeJob(broker))).toMatchObject({ offset: 5n });
    await requestSkip(broker, 5n);
    expect(await runJob(eventTimeJob(broker))).toMatchObject({ offset: 8n });
    const [, second] = broker.messages('target').map((m) => decodeResult(m.bytes));
    // The result holding 5 resumes before it: the next start re-reads 5 under a request for 8.
    expect(second?.recovery?.offset).toBe(4n);
    expect(second?.deadLetters.map((d) => d.offset)).toEqual([5n]);
    await requestSkip(broker, 8n);
    expect(await runJob(eventTimeJob(broker))).toBeUndefined();

    expect(stored(broker)).toEqual(stored(reference));
    const letters = broker.messages('target').flatMap((m) => decodeResult(m.bytes).deadLetters);
    expect(letters.map((d) => d.offset)).toEqual([5n, 8n]);
    const sums = broker.messages('target').flatMap((m) => decodeResult(m.bytes).outputs);
    expect(sums.map((o) => o.value)).toEqual([1, 5, 17, 9]);
  });
});

/** Where the job recorded its stop on 'source' (what `status` and `skip` read), if it did. */
const recordedStop = (broker: MemoryBroker) =>
  broker.source('source').storedOffset(stopReference('target', 'p'));

describe('the stops a skip can step over', () => {
  /** A result of another job at `offset` holding one output per key given. */
  const upstream = (offset: number, keys: string[]): Uint8Array =>
    encodeResult(
      {
        firstOffset: BigInt(offset),
        lastOffset: BigInt(offset),
        messages: keys.length,
        window: { start: 0, end: 10 },
        outputs: keys.map((key) => ({ key, start: 0, end: 10, count: 1, value: 1 })),
        late: [],
        lateDropped: 0,
        filtered: 0,
        deadLetters: [],
      },
      { source: 's0', producer: 'p0', window: 'tumbling(10ms)' },
      'sections',
    )[0] as Uint8Array;

  it("should not record a step job's reducer failing on a later value of a multi-value message", async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createStream('source');
    broker.createStream('target');
    broker.append('source', [upstream(0, ['a'])]);
    broker.append('source', [upstream(1, ['a', 'bad'])]); // its first value is folded already
    const logger = keepingLogger();
    const job = aggregate(
      fromResults(broker.source('source'), { late: 'skip', deadLetters: 'skip' }),
    )
      .count(5)
      .reduce((sum: number, v) => {
        if (v.key === 'bad') throw new Error('bad key');
        return sum + 1;
      }, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0, logger });
    const stop = await runJob(job);
    expect(await recordedStop(broker)).toBeUndefined();
    expect(stop).toMatchObject({ offset: 1n, stage: 'reduce', skippable: false });
    expect(stop).toHaveProperty('skipCommand', undefined);
    expect(logger.lines.some(([, , message]) => message.includes('stream-windows skip --'))).toBe(
      false,
    );
  });

  it('should not record a stop on an asynchronous schema, a setup mistake', async () => {
    const broker = brokerWith([{ n: 0 }, { n: 1 }]);
    const asynchronous: StandardSchemaV1<unknown, { n: number }> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value) => Promise.resolve({ value: value as { n: number } }),
      },
    };
    const job = aggregate(broker.source('source'))
      .decode('json', asynchronous)
      .count(2)
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });
    const stop = await runJob(job);
    expect(await recordedStop(broker)).toBeUndefined();
    expect(stop).toMatchObject({ offset: 0n, stage: 'decode', skippable: false });
  });

  it('should record the stop of a message failing on its own, as skippable', async () => {
    const broker = brokerWith([{ n: 0 }, null]);
    const job = aggregate<{ n: number }>(broker.source('source'))
      .count(2)
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });
    expect(await runJob(job)).toMatchObject({ offset: 1n, stage: 'decode', skippable: true });
    expect(await recordedStop(broker)).toBe(1n);
  });

  it('should name the skip command in the error the job stops with, which the default logger does not print', async () => {
    const broker = brokerWith([{ n: 0 }, null]);
    const job = aggregate<{ n: number }>(broker.source('source'))
      .count(2)
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });
    const stop = await runJob(job);
    const command = 'stream-windows skip --source source --target target --producer p --offset 1';
    expect(stop).toMatchObject({ name: 'ProcessingError', skipCommand: command });
    expect((stop as Error).message).toContain(
      `; once it is known to be bad input, '${command}' lets the next start dead-letter it`,
    );
  });

  it('should neither record nor offer a skip for a job writing to a super stream', async () => {
    const broker = brokerWith([{ n: 0 }, null]);
    broker.createSuperStream('totals', { partitions: 2 });
    const logger = keepingLogger();
    const target = superStreamTarget(
      broker.partitions('totals').map((stream) => broker.target(stream, { producer: 'p' })),
      { superStream: 'totals' },
    );
    const job = aggregate<{ n: number }>(broker.source('source'))
      .count(2)
      .reduce((sum, v) => sum + v.n, 0)
      .to(target, { route: () => 'k', retryDelayMs: 0, logger });
    const stop = await runJob(job);
    expect(stop).toMatchObject({ offset: 1n, stage: 'decode' });
    expect(stop).toHaveProperty('skipCommand', undefined);
    expect(
      await broker.source('source').storedOffset(stopReference('totals', 'p')),
    ).toBeUndefined();
    const messages = logger.lines.map(([, , message]) => message);
    expect(messages.some((message) => message.includes('stream-windows skip --'))).toBe(false);
    expect(messages).toContainEqual(expect.stringContaining('writing to a super stream'));
  });
});

describe('reading the skip request', () => {
  const values4 = [0, 1, 2, 3, null, 5, 6].map((n) => (n === null ? null : { n }));
  /** The memory source of `broker`, counting its reads of a stored offset. */
  const countingReads = (broker: MemoryBroker, fail?: Error) => {
    const source = broker.source('source');
    const read = source.storedOffset.bind(source);
    const asked = { reads: 0 };
    source.storedOffset = (reference: string) => {
      asked.reads++;
      return fail === undefined ? read(reference) : Promise.reject(fail);
    };
    return { source, asked };
  };
  const job = (broker: MemoryBroker, source = broker.source('source')) =>
    aggregate<{ n: number }>(source)
      .count(3)
      .reduce((sum, v) => sum + v.n, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });

  it('should not read it at a start that meets no skippable stop', async () => {
    const broker = brokerWith([0, 1, 2, 3, 4].map((n) => ({ n })));
    const { source, asked } = countingReads(broker);
    await job(broker, source).run({ untilCaughtUp: true });
    expect(asked.reads).toBe(0);
  });

  it('should read it once a skippable stop meets it, and step over the message it covers', async () => {
    const broker = brokerWith(values4);
    await requestSkip(broker, 4n);
    const { source, asked } = countingReads(broker);
    expect(await runJob(job(broker, source))).toBeUndefined();
    expect(asked.reads).toBe(1);
    const letters = broker.messages('target').flatMap((m) => decodeResult(m.bytes).deadLetters);
    expect(letters.map((d) => d.offset)).toEqual([4n]);
  });

  it('should stop at the message as without a request when the request cannot be read', async () => {
    const broker = brokerWith(values4);
    const { source } = countingReads(broker, new SourceError('source', true, 'no leader'));
    // Bounded: a job that kept restarting on the failed read would never stop by itself.
    const signal = AbortSignal.timeout(3_000);
    const stop = await job(broker, source)
      .run({ untilCaughtUp: true, signal })
      .catch((error: unknown) => error);
    expect(stop).toMatchObject({ name: 'ProcessingError', offset: 4n, skippable: true });
  });
});
