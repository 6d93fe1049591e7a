// An event-time job's restart finds its last result from when its source message was stored
// (src/engine/resume/written-after.ts), not by reading back through what other producers wrote
// after it, and its output is byte-identical to an uninterrupted run's. The embedded target
// reads the log's own hint first, so the restart here reads through the RabbitMQ target's
// search (src/rabbitmq/write/result-lookup.ts) over the embedded stream, seeking by time as
// RabbitMQ's timestamp offset spec does.
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../src/memory/index.js';
import { aggregate, jsonMessage, type Source, type Target } from '../../../src/index.js';
import { searchResult, type ResultLookup } from '../../../src/rabbitmq/write/result-lookup.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import { othersResults, publishResults } from '../../support/results/stored-results.js';

interface Reading {
  readonly k: string;
  readonly t: number;
}

const READINGS = Array.from({ length: 60 }, (_, i) => ({
  k: i % 3 === 0 ? 'a' : 'b',
  t: 1_000 * i,
}));
/** Other producers' results written to the target between the two runs. */
const OTHERS = 2_000;

/** A broker whose clock moves 100 ms at every reading of it, with the source and target. */
function broker(): MemoryBroker {
  let clock = 1_700_000_000_000;
  const made = new MemoryBroker({ now: () => (clock += 100) });
  made.createStream('source');
  made.createStream('target');
  return made;
}

/** Appends `readings` to the source, one chunk each. */
function feed(into: MemoryBroker, readings: readonly Reading[]): void {
  for (const r of readings) into.append('source', [jsonMessage(r)]);
}

function job(source: Source, target: Target) {
  return aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .key((r) => r.k)
    .tumbling(10_000, { grace: 1_000 })
    .reduce((sum) => sum + 1, 0)
    .to(target);
}

/** The embedded target `p`, whose readResult is the RabbitMQ target's search; its lookups. */
function searchingTarget(on: MemoryBroker): { target: Target; lookups: ResultLookup[] } {
  const inner = on.target('target', { producer: 'p' });
  const lookups: ResultLookup[] = [];
  const seek = (timestamp: number): Promise<bigint> => {
    const reading = new AbortController();
    const { startOffset } = on.consumer('target', { timestamp }, reading.signal);
    reading.abort();
    return Promise.resolve(startOffset);
  };
  const target: Target = {
    ...forwarding(inner),
    readResult: async (id, where) => {
      const { writtenAfterMs } = where ?? {};
      const time = writtenAfterMs === undefined ? undefined : { writtenAfterMs, seek };
      const source = on.source('target');
      const lookup = await searchResult(source, 'p', id, 5_000, undefined, time);
      lookups.push(lookup);
      return lookup.message;
    },
  };
  return { target, lookups };
}

describe("an event-time job's restart from its source message's time", () => {
  it('reads only its own results back, not the others written after them, and writes what an uninterrupted run writes', async () => {
    const whole = broker();
    feed(whole, READINGS);
    await job(whole.source('source'), whole.target('target', { producer: 'p' })).run({
      untilCaughtUp: true,
    });
    const expected = whole.messages('target').map((m) => m.bytes);

    const restarted = broker();
    feed(restarted, READINGS.slice(0, 30));
    const first = searchingTarget(restarted);
    await job(restarted.source('source'), first.target).run({ untilCaughtUp: true });
    const before = restarted.messages('target').map((m) => m.bytes);
    expect(before.length).toBeGreaterThan(0);
    await publishResults(othersResults(['billing', 'audit'], OTHERS, 0n), (producer) =>
      restarted.target('target', { producer }),
    );
    feed(restarted, READINGS.slice(30));
    const second = searchingTarget(restarted);
    await job(restarted.source('source'), second.target).run({ untilCaughtUp: true });

    expect(second.lookups).toHaveLength(1);
    const [lookup] = second.lookups;
    expect(lookup?.time).toBe('after-time');
    expect(lookup?.message).toBeDefined();
    // From the bound to its last result: at most the results of the first run, and the
    // stream's last message.
    expect(lookup?.messagesRead).toBeLessThanOrEqual(before.length + 1);
    const stored = restarted.messages('target').map((m) => m.bytes);
    const after = stored.slice(before.length + OTHERS);
    expect([...before, ...after]).toEqual(expected);
  });
});
