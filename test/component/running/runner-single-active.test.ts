import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  lastWriteId,
  type JobEventMap,
  type Logger,
  type Source,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { brokerWithCountedReadings, reading, type Reading } from '../../support/jobs/memory-job.js';

const sumJob = (source: Source, broker: MemoryBroker, logger?: Logger) =>
  aggregate<Reading>(source)
    .count(1)
    .reduce((sum, r) => sum + r.value, 0)
    .to(broker.target('target', { producer: 'p' }), {
      retryDelayMs: 1_000,
      ...(logger === undefined ? {} : { logger }),
    });

/** Resolves with the first event of `name` the runner emits. */
function next<E>(on: (listener: (event: E) => void) => () => void): Promise<E> {
  return new Promise((resolve) => {
    const off = on((event) => {
      off();
      resolve(event);
    });
  });
}

describe('a job reading as a single active consumer', () => {
  it('reads its resume point when activated, not when it starts: a standby goes on after the active one', async () => {
    const broker = brokerWithCountedReadings(4);
    const stopA = new AbortController();
    const stopB = new AbortController();
    const a = sumJob(broker.source('source', { singleActive: { name: 'job' } }), broker);
    const b = sumJob(broker.source('source', { singleActive: { name: 'job' } }), broker);
    const started: bigint[] = [];
    b.on('started', (event) => started.push(event.lastPublishingId));
    a.on('published', (event) => event.lastOffset === 3n && stopA.abort());
    const runA = a.run({ signal: stopA.signal });
    const runB = b.run({ signal: stopB.signal });
    const bStarted = next<unknown>((l) => b.on('started', l));
    await runA;
    broker.append('source', [jsonMessage(reading('a', 4, 4))]);
    await bStarted;
    expect(started).toEqual([lastWriteId(3n)]);
    await next<unknown>((l) => b.on('published', l));
    stopB.abort();
    await expect(runB).resolves.toEqual({ results: 1, duplicates: 0, restarts: 0 });
    expect(broker.messages('target')).toHaveLength(5);
  });

  it("takes a step-down as a 'deactivated' event, logged at info: no restart, no delay, and it waits for its next activation", async () => {
    const broker = new MemoryBroker();
    const [, partition = ''] = broker.createSuperStream('s', { partitions: 2 });
    broker.createStream('target');
    broker.append(partition, [jsonMessage(reading('a', 1, 0))]);
    const lines: string[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: (_fields: object, message: string) => void lines.push(`info: ${message}`),
      warn: (_fields: object, message: string) => void lines.push(`warn: ${message}`),
      error: (_fields: object, message: string) => void lines.push(`error: ${message}`),
    };
    const stop = new AbortController();
    const job = sumJob(broker.source(partition, { singleActive: { name: 'job' } }), broker, logger);
    const events: string[] = [];
    for (const name of ['started', 'deactivated', 'restart'] as const) {
      job.on(name, () => events.push(name));
    }
    const run = job.run({ signal: stop.signal });
    await next<unknown>((l) => job.on('published', l));
    // A second member takes partition 1 (1 rem 2); the job steps down and waits, passive.
    const other = broker.singleActive(partition, {
      name: 'job',
      resumeFrom: () => Promise.resolve('first' as const),
    });
    const deactivated = await next<{ stream: string; nextOffset: bigint | undefined }>((l) =>
      job.on('deactivated', l),
    );
    expect(deactivated).toEqual({ stream: partition, nextOffset: 1n });
    // Back when the other leaves: a new start, not a restart (a restart would wait 1 s first).
    const again = next<JobEventMap['started']>((l) => job.on('started', l));
    await other.close();
    await expect(again).resolves.toMatchObject({
      lastPublishingId: lastWriteId(0n),
      lastOffset: 0n,
      from: 1n,
    });
    stop.abort();
    // Resumed after offset 0's step: nothing published twice.
    await expect(run).resolves.toEqual({ results: 1, duplicates: 0, restarts: 0 });
    expect(broker.messages('target')).toHaveLength(1);
    expect(events).toEqual(['started', 'deactivated', 'started']);
    expect(lines).toContain(
      'info: another instance took over the source; waiting to be activated again',
    );
    expect(broker.consumerGroup(partition, 'job').members).toEqual([]);
  });

  it('resumes at once when its last write fails on a quiet source, instead of waiting for the next message', async () => {
    const broker = brokerWithCountedReadings(3);
    broker.injectFault({ stream: 'target', atPublish: 3, point: 'lose-confirm' });
    const stop = new AbortController();
    const job = aggregate<Reading>(broker.source('source'))
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(broker.target('target', { producer: 'p' }), { retryDelayMs: 0 });
    const restarted = next<unknown>((l) => job.on('restart', l));
    const run = job.run({ signal: stop.signal });
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([
      restarted,
      new Promise((_, reject) => {
        bound = setTimeout(() => reject(new Error('the lost confirm was never noticed')), 2_000);
      }),
    ]);
    clearTimeout(bound);
    stop.abort();
    await expect(run).resolves.toMatchObject({ restarts: 1 });
  });
});
