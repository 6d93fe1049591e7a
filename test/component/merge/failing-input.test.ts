// A job over several inputs whose one input's read fails while another waits for chunks that do
// not come: the whole read fails and the job restarts, as over one input. Found 2026-12-08: the
// merge waited for the waiting read to end before it reported the failure, and the job hung.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  mergeInputs,
  SourceError,
  type Source,
  type SourceChunk,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { until } from '../../support/jobs/outbox-fixture.js';
import { bound } from '../../support/timing.js';

/**
 * `source` whose every read fails, retriable, once it was asked where to start and `after()`
 * resolves.
 */
function failingReads(
  source: Source,
  after: () => Promise<void>,
): Source & { readonly reads: () => number } {
  let reads = 0;
  return {
    stream: source.stream,
    endOffset: () => source.endOffset(),
    reads: () => reads,
    read: (from) => ({
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<SourceChunk>> => {
          if (typeof from === 'function') await from();
          await after();
          reads++;
          throw new SourceError(source.stream, true, 'the broker went away');
        },
      }),
    }),
  };
}

describe('a job over several inputs when one input fails', () => {
  it.each([
    ['a plain source', false],
    ['a single active consumer (the first input)', true],
  ])(
    'restarts when one read fails while another, %s, waits for chunks, and stops when asked',
    async (_, singleActive) => {
      const broker = new MemoryBroker();
      for (const stream of ['a', 'b', 'totals']) broker.createStream(stream);
      broker.append('a', [jsonMessage({ at: 1 }), jsonMessage({ at: 2 })]);
      // b fails once a's chunk was read: a's read then waits for more, which never comes.
      let aRead = 0;
      const b = failingReads(broker.source('b'), () =>
        until(() => aRead > 0, bound(5_000), "a's chunk read"),
      );
      const job = aggregate<{ at: number }>(
        mergeInputs(
          [
            singleActive
              ? broker.source('a', { singleActive: { name: 'totals' } })
              : broker.source('a'),
            b,
          ],
          { idleAfter: 'never' },
        ),
      )
        .eventTime((reading) => reading.at)
        .tumbling(1_000, { grace: 0 })
        .reduce((n) => n + 1, 0)
        .to(broker.target('totals', { producer: 'totals' }), { retryDelayMs: 1 });
      job.on('read', ({ stream }) => {
        if (stream === 'a') aRead++;
      });
      const restarts: string[] = [];
      job.on('restart', ({ error }) => restarts.push(error.message));
      const stop = new AbortController();
      const running = job.run({ signal: stop.signal });
      try {
        await until(() => restarts.length >= 2, bound(5_000), 'two restarts');
      } finally {
        stop.abort();
      }
      await running;
      expect(b.reads()).toBeGreaterThanOrEqual(2);
      expect(restarts[0]).toMatch(/reading stream 'b' .*the broker went away/);
    },
  );
});
