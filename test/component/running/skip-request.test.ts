// The operator's skip request over the ports (what `stream-windows skip` and `status` do), on
// the embedded broker: a job stopped by a poison message, the request, and the restart.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  lastWriteId,
  ProcessingError,
} from '../../../src/index.js';
import { jobStatus, requestSkip } from '../../../src/cli/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { skipReference, stopReference } from '../../../src/engine/skip-request.js';
import { MAX_REFERENCE_BYTES } from '../../../src/common/stream-protocol.js';

const POISON = new TextEncoder().encode('{ not json');

/** 'source': {n} at offsets 0..7 but a poison message at 5, one chunk each; an empty 'target'. */
function brokerWithPoison(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => Date.UTC(2026, 0, 1) });
  broker.createStream('source');
  broker.createStream('target');
  for (let n = 0; n < 8; n++) broker.append('source', [n === 5 ? POISON : jsonMessage({ n })]);
  return broker;
}

const job = (broker: MemoryBroker) =>
  aggregate<{ n: number }>(broker.source('source'))
    .count(2)
    .reduce((sum, v) => sum + v.n, 0)
    .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });

const ports = (broker: MemoryBroker, producer = 'p') =>
  [broker.source('source'), broker.target('target', { producer })] as const;

describe('requestSkip', () => {
  it('should let a stopped job step over the message it stopped at, and status tell each stage', async () => {
    const broker = brokerWithPoison();
    const stop = await job(broker)
      .run({ untilCaughtUp: true })
      .catch((error: unknown) => error);
    expect(stop).toBeInstanceOf(ProcessingError);
    expect(stop).toMatchObject({ offset: 5n, stage: 'decode' });
    // Steps 0..1 and 2..3 are published; 4 is open in memory only.
    expect(await jobStatus(...ports(broker))).toMatchObject({
      lastPublishingId: lastWriteId(3n),
      lastOffset: 3n,
      stoppedAt: 5n,
      skipRequested: undefined,
    });

    expect(await requestSkip(...ports(broker), 5n)).toEqual({
      source: 'source',
      target: 'target',
      producer: 'p',
      offset: 5n,
      lastPublishingId: lastWriteId(3n),
    });
    expect(await jobStatus(...ports(broker))).toMatchObject({ stoppedAt: 5n, skipRequested: 5n });

    await job(broker).run({ untilCaughtUp: true });
    const results = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(results.map((r) => [r.firstOffset, r.lastOffset, r.outputs[0]?.value])).toEqual([
      [0n, 1n, 1],
      [2n, 3n, 5],
      [4n, 5n, 4],
      [6n, 7n, 13],
    ]);
    expect(results[2]?.deadLetters).toMatchObject([
      { offset: 5n, stage: 'decode', error: expect.stringMatching(/^skipped by operator/) },
    ]);
    // Published past both: nothing is pending any more.
    expect(await jobStatus(...ports(broker))).toMatchObject({
      lastPublishingId: lastWriteId(7n),
      lastOffset: 7n,
      stoppedAt: undefined,
      skipRequested: undefined,
    });
  });

  it('should refuse an offset the source does not hold, one the job is past, and any but the stop', async () => {
    const broker = brokerWithPoison();
    await job(broker)
      .run({ untilCaughtUp: true })
      .catch(() => undefined);
    await expect(requestSkip(...ports(broker), 8n)).rejects.toThrow(
      "offset must be a message of 'source', whose end is 8, given: 8n",
    );
    await expect(requestSkip(...ports(broker), 3n)).rejects.toThrow(
      "offset must be above the last offset 3 that producer 'p' published on 'target': the job is past it already, given: 3n",
    );
    await expect(requestSkip(...ports(broker), 6n)).rejects.toThrow(
      'offset must be the message the job stopped at: the job last stopped at offset 5, given: 6n',
    );
    // A producer that never stopped (a typo, say) has nothing to step over.
    await expect(requestSkip(...ports(broker, 'q'), 5n)).rejects.toThrow(
      'offset must be the message the job stopped at: the job has not stopped at a message it can step over since its last result, given: 5n',
    );
    // Retention removed the message: the read says so.
    broker.truncate('source', 6n);
    await expect(requestSkip(...ports(broker), 5n)).rejects.toMatchObject({
      name: 'RetentionGapError',
    });
    // None of the refusals stored a request.
    const stored = await broker.source('source').storedOffset(skipReference('target', 'p'));
    expect(stored).toBeUndefined();
  });

  it("should not step over an event-time job's aggregate failure, which depends on its windows", async () => {
    const broker = new MemoryBroker({ now: () => Date.UTC(2026, 0, 1) });
    broker.createStream('source');
    broker.createStream('target');
    for (let n = 0; n < 4; n++) broker.append('source', [jsonMessage({ n, t: n })]);
    const eventTimeJob = () =>
      aggregate<{ n: number; t: number }>(broker.source('source'))
        .eventTime((v) => v.t)
        .tumbling('10ms', { grace: '5ms' }) // a grace: an event-time window
        .reduce((sum, v) => {
          if (v.n === 2) throw new Error('two');
          return sum + v.n;
        }, 0)
        .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 })
        .run({ untilCaughtUp: true });
    await expect(eventTimeJob()).rejects.toMatchObject({ offset: 2n, stage: 'reduce' });
    expect(await jobStatus(...ports(broker))).toMatchObject({ stoppedAt: undefined });
    await expect(requestSkip(...ports(broker), 2n)).rejects.toThrow(
      'the job has not stopped at a message it can step over since its last result',
    );
    // A request stored by other means changes nothing: the same stop.
    await broker.source('source').storeOffset(skipReference('target', 'p'), 2n);
    await expect(eventTimeJob()).rejects.toMatchObject({ offset: 2n, stage: 'reduce' });
  });

  it('should step over a stop of a producer whose names are too long to spell out in a reference', async () => {
    const broker = brokerWithPoison();
    const producer = 'p'.repeat(250); // the longest RabbitMQ takes is 255 bytes
    const longJob = () =>
      aggregate<{ n: number }>(broker.source('source'))
        .count(2)
        .reduce((sum, v) => sum + v.n, 0)
        .to(broker.target('target', { producer }), { retryDelayMs: 0 })
        .run({ untilCaughtUp: true });
    await expect(longJob()).rejects.toMatchObject({ offset: 5n });
    expect(await jobStatus(...ports(broker, producer))).toMatchObject({ stoppedAt: 5n });
    await requestSkip(...ports(broker, producer), 5n);
    await longJob();
    const letters = broker.messages('target').flatMap((m) => decodeResult(m.bytes).deadLetters);
    expect(letters.map((letter) => letter.offset)).toEqual([5n]);
  });
});

describe('the references of a skip request and a stop', () => {
  it('should fit what RabbitMQ keeps, and differ for every pair of names, however long', () => {
    const names = ['t', 'p', 'x'.repeat(127), 'x'.repeat(128), 'é'.repeat(200), 'y'.repeat(255)];
    const references = new Set<string>();
    for (const target of names) {
      for (const producer of names) {
        for (const reference of [
          skipReference(target, producer),
          stopReference(target, producer),
        ]) {
          expect(Buffer.byteLength(reference, 'utf8')).toBeLessThanOrEqual(MAX_REFERENCE_BYTES);
          references.add(reference);
        }
      }
    }
    expect(references.size).toBe(2 * names.length * names.length);
    // A pair that fits keeps its readable form: requests stored before stay where they are.
    expect(skipReference('target', 'p')).toBe('stream-windows skip ["target","p"]');
  });
});
