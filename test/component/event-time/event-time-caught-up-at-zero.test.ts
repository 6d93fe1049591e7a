import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, count, jsonMessage } from '../../../src/index.js';

describe('an event-time job whose only result has publishing id 0', () => {
  it('returns from a second untilCaughtUp run over the same one-message source', async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createStream('source');
    broker.createStream('target');
    broker.append('source', [jsonMessage({ k: 'a', t: 1 })]);
    const job = () =>
      aggregate<{ k: string; t: number }>(broker.source('source'))
        .eventTime((r) => r.t)
        .key((r) => r.k)
        .window(count(1, { perKey: true }))
        .reduce((a) => a)
        .to(broker.target('target', { producer: 'p' }));
    await job().run({ untilCaughtUp: true });
    expect(broker.messages('target')).toHaveLength(1); // decided at offset 0, resume offset 1
    const stop = new AbortController();
    const bound = setTimeout(() => stop.abort(), 2_000);
    let caughtUp = false;
    const runner = job();
    runner.on('caughtUp', () => (caughtUp = true));
    await runner.run({ untilCaughtUp: true, signal: stop.signal });
    clearTimeout(bound);
    // Without the bound the run never returns: it waits at offset 1 for a message to come.
    expect({ caughtUp, abortedByBound: stop.signal.aborted }).toEqual({
      caughtUp: true,
      abortedByBound: false,
    });
  });
});
