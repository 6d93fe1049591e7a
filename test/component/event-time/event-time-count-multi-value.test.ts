import { describe, expect, it } from 'vitest';
import { aggregate, count, fromResults } from '../../../src/index.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { runThroughCrashes } from '../../support/arbitraries/crashes.js';
import { results } from '../../support/jobs/memory-job.js';
import { targetBytes } from '../../support/arbitraries/memory-scenario.js';

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
    const brokerWithChunks = () => {
      const broker = new MemoryBroker({ now: () => 0 });
      broker.createStream('source');
      broker.createStream('target');
      for (const chunk of chunks) broker.append('source', chunk);
      return broker;
    };
    const job = (broker: MemoryBroker) =>
      aggregate(fromResults(broker.source('source'), { late: 'skip', deadLetters: 'skip' }))
        .key((v) => String(v.key))
        .window(count(3, { perKey: true }))
        .aggregate({ init: () => 0, add: (s: number) => s + 1, result: (s) => s })
        .to(broker.target('target', { producer: 'p' }));
    const clean = brokerWithChunks();
    await job(clean).run({ untilCaughtUp: true });
    // sanity: two results uninterrupted, at offsets 1 and 3
    expect(results(clean).map((r) => r.lastOffset)).toEqual([1n, 3n]);
    // A crash right after the k-th confirmed publish, for each k, then a clean restart.
    for (let k = 1; k <= 2; k++) {
      const broker = brokerWithChunks();
      const crashed = await runThroughCrashes(
        broker,
        'target',
        [{ atPublish: k, point: 'after-confirm' }],
        () => job(broker),
      );
      // The crashing run publishes what the clean one does up to its crash, which comes at
      // the target's next call: after the first result; after the last, the run has none.
      expect({ k, crashed }).toEqual({ k, crashed: k === 1 ? 1 : 0 });
      expect({ k, bytes: targetBytes(broker) }).toEqual({ k, bytes: targetBytes(clean) });
    }
  });
});
