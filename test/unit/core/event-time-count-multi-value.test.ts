import { describe, expect, it } from 'vitest';
import { aggregate, count, decodeResult, fromResults } from '../../../src/index.js';
import { encodeResult } from '../../../src/core/result-format.js';
import { crashRuns } from '../../support/event-time-crashes.js';

/** A stage-1 result holding one output per key given, all in window [start, start + 10). */
function stage1(offset: number, keys: string[], start: number): Uint8Array {
  return encodeResult(
    {
      firstOffset: BigInt(offset),
      lastOffset: BigInt(offset),
      messages: keys.length,
      window: { start, end: start + 10 },
      outputs: keys.map((key) => ({ key, start, end: start + 10, count: 1, value: 1 })),
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    },
    { source: 's0', producer: 'p0', window: 'tumbling(10ms)' },
    'sections',
  )[0] as Uint8Array;
}

describe('per-key count windows over a fromResults source', () => {
  it('publish the same results after a crash as without one, when a window closes inside a multi-value message', async () => {
    // count(3): offset 0 brings a; offset 1 brings a, a, a: the 1st and 2nd close [a@0..1],
    // the 3rd opens the next window of a AT offset 1, which offsets 2 and 3 complete.
    const chunks = [
      [stage1(0, ['a'], 0)],
      [stage1(1, ['a', 'a', 'a'], 10)],
      [stage1(2, ['a'], 20)],
      [stage1(3, ['a'], 30)],
      [stage1(4, ['a'], 40)],
    ];
    const { clean, crashed } = await crashRuns(chunks, (broker) =>
      aggregate(fromResults(broker.source('source'), { late: 'skip', deadLetters: 'skip' }))
        .key((v) => String(v.key))
        .window(count(3, { perKey: true }))
        .aggregate({ init: () => 0, add: (s: number) => s + 1, result: (s) => s })
        .to(broker.target('target', { producer: 'p' })),
    );
    // sanity: two results uninterrupted, at offsets 1 and 3
    expect(clean.map((hex) => decodeResult(Buffer.from(hex, 'hex')).lastOffset)).toEqual([1n, 3n]);
    for (const run of crashed)
      expect({ k: run.k, bytes: run.bytes }).toEqual({ k: run.k, bytes: clean });
  });
});
