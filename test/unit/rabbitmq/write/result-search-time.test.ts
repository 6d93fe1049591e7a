// The search behind the RabbitMQ target's readResult (src/rabbitmq/write/result-lookup.ts),
// told when the result was written at the earliest, run over an embedded stream whose clock
// the test sets: from a bound at or before our result it reads only what lies between, whatever
// was written after; any bound (wrong, skewed, later than every chunk) answers as none does.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../../src/memory/index.js';
import {
  searchResult,
  type StreamTail,
  type TimeBound,
  type TimeUse,
} from '../../../../src/rabbitmq/write/result-lookup.js';
import type { SourceChunk } from '../../../../src/ports/ports.js';
import {
  SubscribeError,
  SubscriptionLostError,
} from '../../../../src/rabbitmq/read/source-subscription.js';
import { Coverage } from '../../../support/arbitraries/coverage.js';
import {
  otherWrites as others,
  ourWrite as ours,
  resultMessages,
  type SearchWrite,
} from '../../../support/results/stored-results.js';
import type { PackMode } from '../../../../src/result-format/result-format.js';
import { bound } from '../../../support/timing.js';

const TIMEOUT_MS = bound(5_000);
/** Write i is stamped `START + STEP * i`. */
const START = 1_000_000;
const STEP = 10;

interface Write extends SearchWrite {
  /** How far the clock moves after this write; `STEP` unless told (below 0: stepped back). */
  readonly step?: number;
}

/**
 * A stream holding `writes` in order, each one chunk stamped `STEP` ms after the one before
 * (or as its `step` says); `stamps`, each write's.
 */
async function streamOf(writes: readonly Write[]) {
  let clock = START;
  const stamps: number[] = [];
  const broker = new MemoryBroker({ now: () => clock });
  broker.createStream('results');
  for (const { producer, id, pack, step = STEP } of writes) {
    const outputs = pack === 'batch' ? 3 : 1;
    stamps.push(clock);
    // Each write as its own process's, on its own connection: one name is declared once per connection.
    await broker
      .target('results', { producer, connection: `write ${id}` })
      .publish(id, resultMessages(producer, id, pack, outputs));
    clock += step;
  }
  const source = broker.source('results');
  /** The bound `writtenAfterMs`, seeking as RabbitMQ's timestamp offset spec does. */
  const bound = (writtenAfterMs: number): TimeBound => ({
    writtenAfterMs: () => Promise.resolve(writtenAfterMs),
    seek: (timestampMs) => {
      const reading = new AbortController();
      const { startOffset } = broker.consumer(
        'results',
        { timestamp: timestampMs },
        reading.signal,
      );
      reading.abort();
      return Promise.resolve(startOffset);
    },
  });
  return { broker, source, bound, stamps };
}

/** When write `index` was stored. */
const stampOf = (index: number): number => START + STEP * index;

describe('the result search from a time bound', () => {
  it('reads only what lies between the bound and our result, however much was written after it', async () => {
    const read: number[] = [];
    for (const after of [0, 100, 10_000]) {
      const writes = [...others(500, 0n), ours(10n), ...others(20, 600n), ours(20n)];
      const { source, bound } = await streamOf([...writes, ...others(after, 1_000n)]);
      // The bound: write 490's time, ten writes before our first result.
      const lookup = await searchResult(
        source,
        'ours',
        20n,
        TIMEOUT_MS,
        undefined,
        bound(stampOf(490)),
      );
      expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
      expect(lookup.time).toBe('after-time');
      read.push(lookup.messagesRead);
      const unbounded = await searchResult(source, 'ours', 20n, TIMEOUT_MS);
      expect(unbounded.messagesRead).toBeGreaterThanOrEqual(after / 2);
    }
    // The stream's last message, then writes 490 to 521 (ours the last of them).
    expect(read).toEqual([1, 1 + 32, 1 + 32]);
  });

  it.each<[string, (last: number) => number, TimeUse]>([
    ['later than every chunk (a clock skewed forward)', (last) => stampOf(last) + 1, 'unusable'],
    ['after our result (searched back from its chunk)', () => stampOf(530), 'before-time'],
    ['before the first chunk', () => 0, 'after-time'],
    ['at our result', () => stampOf(521), 'after-time'],
  ])('answers as without a bound for a bound %s', async (_, boundOf, use) => {
    const writes = [
      ...others(500, 0n),
      ours(10n),
      ...others(20, 600n),
      ours(20n),
      ...others(50, 1_000n),
    ];
    const { source, bound } = await streamOf(writes);
    const lookup = await searchResult(
      source,
      'ours',
      20n,
      TIMEOUT_MS,
      undefined,
      bound(boundOf(writes.length - 1)),
    );
    expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
    expect(lookup.time).toBe(use);
  });

  it('answers as without a bound when retention removed the chunks up to ours, or our result', async () => {
    const writes = [...others(50, 0n), ours(20n), ...others(50, 2_000n)];
    for (const removedBefore of [10n, 51n]) {
      const { broker, source, bound } = await streamOf(writes);
      broker.truncate('results', removedBefore);
      const plain = await searchResult(source, 'ours', 20n, TIMEOUT_MS);
      const bounded = await searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, bound(0));
      expect(bounded.message).toEqual(plain.message);
    }
  });

  it('a stored hint is used first', async () => {
    const writes = [...others(50, 0n), ours(20n), ...others(50, 2_000n)];
    const { source, bound } = await streamOf(writes);
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, 50n, bound(stampOf(0)));
    expect(lookup).toMatchObject({ hint: 'at-hint', messagesRead: 1 });
    expect(lookup.time).toBeUndefined();
  });

  it('asks the bound only when no hint answered', async () => {
    const writes = [...others(50, 0n), ours(20n), ...others(50, 2_000n)];
    const { source, bound } = await streamOf(writes);
    let asked = 0;
    const counted = (): TimeBound => {
      const { writtenAfterMs, seek } = bound(stampOf(0));
      return { seek, writtenAfterMs: () => (asked++, writtenAfterMs()) };
    };
    await searchResult(source, 'ours', 20n, TIMEOUT_MS, 50n, counted());
    expect(asked).toBe(0);
    // Past the end: unusable.
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, 500n, counted());
    expect(lookup).toMatchObject({ hint: 'unusable', time: 'after-time' });
    expect(asked).toBe(1);
  });

  it("does not ask the bound when the result is in the stream's last chunk", async () => {
    const writes = [...others(50, 0n), ours(20n)];
    const { source, bound } = await streamOf(writes);
    let asked = 0;
    const { writtenAfterMs, seek } = bound(stampOf(0));
    const counted: TimeBound = { seek, writtenAfterMs: () => (asked++, writtenAfterMs()) };

    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, counted);

    expect(lookup).toMatchObject({ message: resultMessages('ours', 20n)[0], time: 'after-time' });
    expect(asked).toBe(0);
  });

  it("looks at the stream's last message in the chunk it was handed for the stream's end, without a read of its own", async () => {
    for (const writes of [
      [...others(50, 0n), ours(20n)],
      [...others(50, 0n), ours(20n), ...others(30, 2_000n)],
    ]) {
      const { source, bound } = await streamOf(writes);
      const tail = async (): Promise<SourceChunk | undefined> => {
        const end = await source.endOffset();
        const reading = new AbortController();
        for await (const chunk of source.read(end - 1n, reading.signal)) return chunk;
        return undefined;
      };
      const search = (handed?: StreamTail) =>
        searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, bound(stampOf(40)), handed);
      const [read, handed] = [await search(), await search(tail)];

      expect(handed).toMatchObject({ message: resultMessages('ours', 20n)[0], time: 'after-time' });
      expect(handed.message).toEqual(read.message);
      expect(handed.messagesRead).toBe(read.messagesRead);
      expect(handed.windows).toBe(read.windows - 1);
    }
  });

  it('goes on without the bound when seeking by time fails retriably, and says the timestamp', async () => {
    const writes = [...others(50, 0n), ours(20n), ...others(50, 2_000n)];
    const { source, bound } = await streamOf(writes);
    const refusing = (retriable: boolean): TimeBound => ({
      writtenAfterMs: bound(stampOf(0)).writtenAfterMs,
      seek: (timestamp) =>
        Promise.reject(new SubscribeError('results', { timestamp }, 6, retriable)),
    });
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, refusing(true));
    expect(lookup).toMatchObject({ message: resultMessages('ours', 20n)[0], time: 'unusable' });
    const lost = await searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, {
      ...refusing(true),
      seek: () => Promise.reject(new SubscriptionLostError('results', 0n, 'connection closed')),
    });
    expect(lost.time).toBe('unusable');
    // A final refusal (the stream deleted) is the search's to meet: thrown on.
    await expect(
      searchResult(source, 'ours', 20n, TIMEOUT_MS, undefined, refusing(false)),
    ).rejects.toThrow(`subscribing at timestamp ${stampOf(0)} (`);
  });

  it('answers, from any bound, what the search answers without one, a clock stepped back included (property)', async () => {
    const coverage = new Coverage('time-bounded search');
    const write = fc.record({
      producer: fc.constantFrom('ours', 'billing', 'audit'),
      pack: fc.constantFrom<PackMode>('sections', 'batch'),
      // Now and then the clock steps back after a write, by up to 8 writes' time: a later
      // result may then be stamped before the bound, where the read on from it stops.
      step: fc.oneof(
        { weight: 3, arbitrary: fc.constant(STEP) },
        { weight: 1, arbitrary: fc.integer({ min: -8 * STEP, max: -1 }) },
      ),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(write, { minLength: 1, maxLength: 60 }),
        fc.oneof(fc.constant('last' as const), fc.nat({ max: 100 })),
        fc.integer({ min: -5, max: 70 }),
        async (specs, idPick, boundPick) => {
          coverage.run();
          const next = new Map<string, bigint>();
          const writes = specs.map(({ producer, pack, step }) => {
            const id = (next.get(producer) ?? 0n) + 2n;
            next.set(producer, id);
            return { producer, id, pack, step };
          });
          const { broker, source, bound, stamps } = await streamOf(writes);
          const last = next.get('ours') ?? 0n;
          const wanted = idPick === 'last' ? last : BigInt(idPick % (Number(last) + 3));
          const writtenAfterMs = (stamps[boundPick] ?? stampOf(boundPick)) + (boundPick % 2) * 3;
          const plain = await searchResult(source, 'ours', wanted, TIMEOUT_MS);
          const bounded = await searchResult(
            source,
            'ours',
            wanted,
            TIMEOUT_MS,
            undefined,
            bound(writtenAfterMs),
          );
          expect(bounded.message).toEqual(plain.message);
          // The embedded target's own search (src/memory/target.ts) answers the same.
          const embedded = broker.target('results', { producer: 'ours' });
          expect(await embedded.readResult(wanted)).toEqual(plain.message);
          const where = { writtenAfterMs: () => Promise.resolve(writtenAfterMs) };
          expect(await embedded.readResult(wanted, where)).toEqual(plain.message);
          coverage.count(bounded.time ?? 'none');
          // The clock stepped back after a write of ours before the last: the stamps around
          // our results are out of order, where reading on from the bound can stop short.
          const steppedBack = writes.some(
            (w, i) => w.step < 0 && writes.slice(i + 1).some((x) => x.producer === 'ours'),
          );
          coverage.count('stepped back', steppedBack);
          coverage.count(
            'stepped back, before-time',
            steppedBack && bounded.time === 'before-time',
          );
          coverage.count('stepped back, found', steppedBack && plain.message !== undefined);
          coverage.count(plain.message === undefined ? 'absent' : 'found');
        },
      ),
      { numRuns: 300 },
    );
    coverage.expectRates({
      'after-time': 0.1,
      'before-time': 0.05,
      unusable: 0.05,
      found: 0.3,
      absent: 0.2,
      'stepped back': 0.4,
      'stepped back, found': 0.25,
    });
  });
});
