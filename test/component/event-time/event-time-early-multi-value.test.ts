import { describe, expect, it } from 'vitest';
import { aggregate, fromResults, tumbling, type EarlyUpdates } from '../../../src/index.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { results } from '../../support/jobs/memory-job.js';

/** A stage-1 result (offset `offset`) with one output of key `a` per value, in window [start, start + 10). */
function stage1(offset: number, values: number[], start: number): Uint8Array {
  return encodeResult(
    {
      firstOffset: BigInt(offset),
      lastOffset: BigInt(offset),
      messages: values.length,
      window: { start, end: start + 10 },
      outputs: values.map((value) => ({ key: 'a', start, end: start + 10, count: 1, value })),
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    },
    { source: 's0', producer: 'p0', window: 'tumbling(10ms)' },
    'sections',
  )[0] as Uint8Array;
}

/** Stage 2: per-key windows of 100 ms collecting the values, with `early` updates. */
async function updates(
  messages: Uint8Array[],
  early: EarlyUpdates,
): Promise<{ at: bigint; count: number; value: unknown; final: boolean }[]> {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  for (const message of messages) broker.append('source', [message]);
  await aggregate(
    fromResults<number>(broker.source('source'), { late: 'skip', deadLetters: 'skip' }),
  )
    .key((v) => String(v.key))
    .window(tumbling('100ms', { grace: 0 }))
    .emit({ early })
    .aggregate({
      init: (): number[] => [],
      add: (values, v) => [...values, v.value],
      result: (values) => values,
    })
    .to(broker.target('target', { producer: 'p' }))
    .run({ untilCaughtUp: true });
  return results(broker).flatMap((r) =>
    r.outputs.map((o) => ({ at: r.lastOffset, count: o.count, value: o.value, final: o.final })),
  );
}

describe('early updates of a message of several values', () => {
  it('updates a window once per message, after all its values, with every: 1', async () => {
    expect(await updates([stage1(0, [0, 1, 2], 0), stage1(1, [3], 10)], { every: 1 })).toEqual([
      { at: 0n, count: 3, value: [0, 1, 2], final: false },
      { at: 1n, count: 4, value: [0, 1, 2, 3], final: false },
    ]);
  });

  it('updates a window whose count crossed a multiple of n during the message, once', async () => {
    // every: 2 — offset 0 brings the count from 0 to 5 (past 2 and 4): one update; offset 1
    // to 6: one; offset 2 to 7: none; offset 3 (a later window) closes [0,100).
    expect(
      await updates(
        [
          stage1(0, [0, 1, 2, 3, 4], 0),
          stage1(1, [5], 10),
          stage1(2, [6], 20),
          stage1(3, [7], 200),
        ],
        { every: 2 },
      ),
    ).toEqual([
      { at: 0n, count: 5, value: [0, 1, 2, 3, 4], final: false },
      { at: 1n, count: 6, value: [0, 1, 2, 3, 4, 5], final: false },
      { at: 3n, count: 7, value: [0, 1, 2, 3, 4, 5, 6], final: true },
    ]);
  });

  it("puts a window once in a result under 'each-result'", async () => {
    expect(await updates([stage1(0, [0, 1, 2], 0), stage1(1, [3], 200)], 'each-result')).toEqual([
      { at: 1n, count: 3, value: [0, 1, 2], final: true },
      { at: 1n, count: 1, value: [3], final: false },
    ]);
  });
});
