import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import {
  aggregate,
  decodeResult,
  jsonMessage,
  type FlushOptions,
  type RunOptions,
} from '../../../src/index.js';
import { results } from '../../support/jobs/memory-job.js';

interface Click {
  readonly k: string;
  readonly t: number;
}

function brokerWith(clicks: readonly Click[]): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('source');
  broker.createStream('target');
  append(broker, clicks);
  return broker;
}

function append(broker: MemoryBroker, clicks: readonly Click[]): void {
  if (clicks.length > 0)
    broker.append(
      'source',
      clicks.map((c) => jsonMessage(c)),
    );
}

function job(broker: MemoryBroker, flush?: FlushOptions) {
  return aggregate<Click>(broker.source('source'))
    .eventTime((c) => c.t)
    .key((c) => c.k)
    .tumbling(10, { grace: 10 })
    .aggregate({
      init: () => 0,
      add: (n: number) => n + 1,
      result: (n) => n,
      merge: (a, b) => a + b,
    })
    .to(broker.target('target', { producer: 'p' }), flush === undefined ? {} : { flush });
}

/** Resolves at the runner's first `name` event. */
function first(runner: ReturnType<typeof job>, name: 'published' | 'read'): Promise<void> {
  return new Promise((resolve) => {
    runner.on(name, () => resolve());
  });
}

const run = (broker: MemoryBroker, flush?: FlushOptions, options: RunOptions = {}) =>
  job(broker, flush).run({ untilCaughtUp: true, ...options });

describe('flushing event-time windows of a quiet source', () => {
  it('publishes every open window at the end of an untilCaughtUp run, and marks what later messages add as continuing it', async () => {
    const broker = brokerWith([
      { k: 'a', t: 5 },
      { k: 'b', t: 15 },
    ]);
    await run(broker, { caughtUp: true });
    const [flushed] = results(broker);
    expect(flushed).toMatchObject({ flushed: true, lastOffset: 1n, messages: 2 });
    expect(flushed?.outputs.map((o) => [o.key, o.start, o.count, o.continues])).toEqual([
      ['a', 0, 1, false],
      ['b', 10, 1, false],
    ]);

    // The watermark did not move: a later message of [0,10) is not late, it continues it.
    append(broker, [
      { k: 'a', t: 6 },
      { k: 'c', t: 21 },
    ]);
    await run(broker);
    const continued = results(broker)[1];
    expect(continued).toMatchObject({ flushed: false, firstOffset: 2n, lastOffset: 3n });
    expect(continued?.outputs.map((o) => [o.key, o.start, o.count, o.continues])).toEqual([
      ['a', 0, 1, true],
    ]);
  });

  it('repeats a flush when a restart re-reads past it, so that a continued window counts only what came after the flush', async () => {
    const broker = brokerWith([
      { k: 'a', t: 5 },
      { k: 'b', t: 15 },
    ]);
    await run(broker, { caughtUp: true }); // flush at offset 1: a [0,10) and b [10,20)
    append(broker, [
      { k: 'a', t: 6 },
      { k: 'b', t: 16 },
      { k: 'c', t: 21 }, // closes [0,10) at offset 4; b [10,20) stays open since offset 1
    ]);
    await run(broker);
    const atFour = results(broker)[1];
    expect(atFour?.lastOffset).toBe(4n);
    expect(atFour?.recovery).toMatchObject({ offset: 1n, lastFlush: 1n });

    // A new run re-reads from offset 1: without the flush repeated there, b would count 3.
    append(broker, [
      { k: 'b', t: 17 },
      { k: 'c', t: 31 },
    ]);
    await run(broker);
    const last = results(broker)[2];
    expect(last?.outputs.map((o) => [o.key, o.start, o.count, o.continues])).toEqual([
      ['b', 10, 2, true],
    ]);
    // Every message is in exactly one published result.
    expect(results(broker).reduce((n, r) => n + r.messages, 0)).toBe(7);
  });

  it('adds the open windows to a result decided at the last message read, when an untilCaughtUp run flushes', async () => {
    const broker = brokerWith([
      { k: 'a', t: 5 },
      { k: 'a', t: 25 }, // closes [0,10) at offset 1; [20,30) is open, its only message decided
    ]);
    await run(broker, { caughtUp: true });
    expect(
      results(broker).map((r) => [r.lastOffset, r.flushed, r.outputs.map((o) => o.start)]),
    ).toEqual([[1n, true, [0, 20]]]);
    // [20,30) stays open, emptied: a restart re-reads from its first offset and repeats the flush.
    expect(results(broker)[0]?.recovery).toMatchObject({ offset: 1n, lastFlush: 1n });
  });

  it('adds the open windows to a result decided at the last message read, when a silence of idleMs follows it', async () => {
    const broker = brokerWith([
      { k: 'a', t: 5 },
      { k: 'a', t: 25 }, // closes [0,10) at offset 1; [20,30) stays open
    ]);
    const stop = new AbortController();
    const runner = job(broker, { idleMs: 5, oneInstance: true });
    const published = first(runner, 'published');
    const running = runner.run({ signal: stop.signal });
    await published;
    stop.abort();
    await running;
    expect(
      results(broker).map((r) => [r.lastOffset, r.flushed, r.outputs.map((o) => o.start)]),
    ).toEqual([[1n, true, [0, 20]]]);
  });

  it('publishes a result it held for an idle flush once the next message comes, or the job stops', async () => {
    const broker = brokerWith([
      { k: 'a', t: 5 },
      { k: 'a', t: 25 },
    ]);
    const stop = new AbortController();
    // A silence far longer than the test: only the next chunk, or the stop, publishes.
    const runner = job(broker, { idleMs: 3_600_000, oneInstance: true });
    const reads: bigint[] = [];
    const twoRead = new Promise<void>((resolve) => {
      runner.on('read', ({ firstOffset }) => {
        reads.push(firstOffset);
        if (reads.length === 2) resolve();
      });
    });
    const firstRead = first(runner, 'read');
    const running = runner.run({ signal: stop.signal });
    await firstRead;
    append(broker, [{ k: 'a', t: 40 }]); // closes [20,30) at offset 2
    await twoRead;
    stop.abort();
    await running;
    expect(results(broker).map((r) => [r.lastOffset, r.flushed])).toEqual([
      [1n, false],
      [2n, false],
    ]);
  });

  it('keeps its recovery state one offset long however often one long-open window is flushed', async () => {
    const broker = brokerWith([]);
    for (let t = 1; t <= 200; t++) {
      append(broker, [{ k: 'a', t: t % 10 }]); // all in [0,10): the window never closes
      await run(broker, { caughtUp: true });
    }
    const stored = broker.messages('target');
    expect(stored).toHaveLength(200);
    const last = decodeResult(stored[199]?.bytes as Uint8Array);
    expect(last.recovery).toMatchObject({ offset: 0n, lastFlush: 199n });
    // Grows only with the digits of its offsets, not with the flushes before it.
    expect((stored[199]?.bytes.length ?? 0) - (stored[10]?.bytes.length ?? 0)).toBeLessThan(12);
  });

  it('flushes the open windows after a wall-clock silence of idleMs', async () => {
    const broker = brokerWith([{ k: 'a', t: 5 }]);
    const stop = new AbortController();
    const runner = job(broker, { idleMs: 20, oneInstance: true });
    const flushed = first(runner, 'published');
    const running = runner.run({ signal: stop.signal });
    await flushed;
    stop.abort();
    await running;
    expect(results(broker).map((r) => [r.lastOffset, r.flushed, r.outputs.length])).toEqual([
      [0n, true, 1],
    ]);
  });
});
