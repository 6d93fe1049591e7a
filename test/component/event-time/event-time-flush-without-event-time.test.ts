import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, decodeResult, jsonMessage, tumbling } from '../../../src/index.js';
import { results } from '../../support/jobs/memory-job.js';

describe('a flush before any message had an event time', () => {
  it.each(['sections', 'batch', 'single'] as const)(
    "publishes a result without sections the next run can restart from, with pack '%s'",
    async (pack) => {
      const broker = new MemoryBroker({ now: () => 0 });
      broker.createStream('source');
      broker.createStream('target');
      broker.append('source', [jsonMessage({ t: 5, skip: true })]);
      const job = () =>
        aggregate<{ t: number; skip?: boolean }>(broker.source('source'))
          .filter((m) => m.skip !== true)
          .eventTime((m) => m.t)
          .window(tumbling(10, { grace: 0 }))
          .reduce((a) => a)
          .to(broker.target('target', { producer: 'p' }), {
            flush: { caughtUp: true },
            pack,
          });
      await job().run({ untilCaughtUp: true });
      // The flush published the filtered message's result, with the watermark still -Infinity.
      const [only] = broker.messages('target');
      expect(only).toBeDefined();
      broker.append('source', [jsonMessage({ t: 6 })]);
      await expect(job().run({ untilCaughtUp: true })).resolves.toMatchObject({
        results: 1,
        restarts: 0,
      });
      expect(decodeResult((only as { bytes: Uint8Array }).bytes).filtered).toBe(1);
      // The restart went on right after the flushed result: the new message, alone, in one
      // more result, flushed too, its window opened by the first event time.
      const [first, second, ...more] = results(broker);
      expect(first?.lastOffset).toBe(0n);
      expect(more).toEqual([]);
      expect(second).toMatchObject({
        firstOffset: 1n,
        lastOffset: 1n,
        messages: 1,
        filtered: 0,
        flushed: true,
        outputs: [{ start: 0, end: 10, count: 1, value: { t: 6 } }],
      });
    },
  );
});
