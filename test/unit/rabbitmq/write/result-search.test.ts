// The search behind the RabbitMQ target's readResult (src/rabbitmq/write/result-lookup.ts),
// run over an embedded stream: a hint is checked, never trusted, so whatever offset it names
// the answer is the search's without one; a hint at the producer's last result reads one chunk
// whatever was written after it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../../../src/memory/index.js';
import { searchResult, type HintUse } from '../../../../src/rabbitmq/write/result-lookup.js';
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

type Write = SearchWrite;

/** A stream holding `writes` in order, and where each write's first message lies. */
async function streamOf(writes: readonly Write[]) {
  const broker = new MemoryBroker();
  broker.createStream('results');
  const source = broker.source('results');
  const offsets: bigint[] = [];
  for (const { producer, id, pack } of writes) {
    offsets.push(await source.endOffset());
    const outputs = pack === 'batch' ? 3 : 1;
    // Each write as its own process's, on its own connection: one name is declared once per connection.
    await broker
      .target('results', { producer, connection: `write ${id}` })
      .publish(id, resultMessages(producer, id, pack, outputs));
  }
  return { broker, source, offsets };
}

describe('the result search from a hint', () => {
  it('reads one chunk for a hint at our last result, however much others wrote after it', async () => {
    const read: number[] = [];
    for (const after of [0, 100, 10_000]) {
      const writes = [...others(500, 0n), ours(10n), ours(20n), ...others(after, 1_000n)];
      const { source, offsets } = await streamOf(writes);
      const hint = offsets[501] as bigint;
      const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, hint);
      expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
      expect(lookup.hint).toBe('at-hint');
      expect(lookup.windows).toBe(1);
      read.push(lookup.messagesRead);
      // Without the hint the search reads at least half of what lies after ours (its windows
      // before the one holding ours).
      const unhinted = await searchResult(source, 'ours', 20n, TIMEOUT_MS);
      expect(unhinted.messagesRead).toBeGreaterThanOrEqual(after / 2);
    }
    expect(new Set(read)).toEqual(new Set([1]));
  });

  it('reads on from an older result of ours at the hint, only as far as the wanted one', async () => {
    const writes = [ours(10n), ...others(300, 0n), ours(20n), ...others(5_000, 1_000n)];
    const { source, offsets } = await streamOf(writes);
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, offsets[0]);
    expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
    expect(lookup.hint).toBe('after-hint');
    expect(lookup.messagesRead).toBe(1 + 300 + 1);
  });

  it('searches back from a hint after our result, reading only what lies between', async () => {
    const writes = [...others(500, 0n), ours(20n), ...others(5_000, 1_000n)];
    const { source, offsets } = await streamOf(writes);
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, offsets[510]);
    expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
    expect(lookup.hint).toBe('before-hint');
    // The chunk at the hint (510), then the window of 64 offsets before its end from its
    // start (447) to ours (500).
    expect(lookup.messagesRead).toBe(1 + (500 - 447 + 1));
  });

  it.each<[string, (end: bigint) => bigint, HintUse]>([
    ['past the end', (end) => end + 10n, 'unusable'],
    ['at the end', (end) => end, 'unusable'],
    ["at another producer's message before ours", () => 3n, 'after-hint'],
  ])('answers as without a hint for a hint %s', async (_, hintOf, use) => {
    const writes = [
      ...others(50, 0n),
      ours(10n),
      ...others(20, 1_000n),
      ours(20n),
      ...others(5, 2_000n),
    ];
    const { source } = await streamOf(writes);
    const end = await source.endOffset();
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, hintOf(end));
    expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
    expect(lookup.hint).toBe(use);
  });

  it('answers as without a hint for a hint retention removed', async () => {
    const writes = [...others(50, 0n), ours(20n), ...others(5, 2_000n)];
    const { broker, source } = await streamOf(writes);
    broker.truncate('results', 10n);
    const lookup = await searchResult(source, 'ours', 20n, TIMEOUT_MS, 2n);
    expect(lookup.message).toEqual(resultMessages('ours', 20n)[0]);
    expect(lookup.hint).toBe('unusable');
  });

  it('answers the first part of a batch result at the hint', async () => {
    const writes = [...others(10, 0n), ours(20n, 'batch'), ...others(100, 1_000n)];
    const { source, offsets } = await streamOf(writes);
    const lookup = await searchResult(
      source,
      'ours',
      20n,
      TIMEOUT_MS,
      (offsets[10] as bigint) + 1n,
    );
    expect(lookup.message).toEqual(resultMessages('ours', 20n, 'batch', 3)[0]);
  });

  it('answers, from any hint, what the search answers without one (property)', async () => {
    const coverage = new Coverage('hinted search');
    const write = fc.record({
      producer: fc.constantFrom('ours', 'billing', 'audit'),
      pack: fc.constantFrom<PackMode>('sections', 'batch'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(write, { minLength: 1, maxLength: 60 }),
        fc.oneof(fc.constant('last' as const), fc.nat({ max: 100 })),
        fc.oneof(
          fc.nat({ max: 60 }).map((write) => ({ write })),
          fc.nat({ max: 70 }),
        ),
        async (specs, idPick, hintPick) => {
          coverage.run();
          const next = new Map<string, bigint>();
          const writes = specs.map(({ producer, pack }) => {
            const id = (next.get(producer) ?? 0n) + 2n;
            next.set(producer, id);
            return { producer, id, pack };
          });
          const { source, offsets } = await streamOf(writes);
          const end = await source.endOffset();
          // Where a write begins, or any offset up to a few past the end.
          const hint =
            typeof hintPick === 'number'
              ? BigInt(hintPick % (Number(end) + 3))
              : (offsets[hintPick.write % offsets.length] as bigint);
          // Ours: its last id, or an id it wrote, one between two, or one past its last.
          const last = next.get('ours') ?? 0n;
          const wanted = idPick === 'last' ? last : BigInt(idPick % (Number(last) + 3));
          const plain = await searchResult(source, 'ours', wanted, TIMEOUT_MS);
          const hinted = await searchResult(source, 'ours', wanted, TIMEOUT_MS, hint);
          expect(hinted.message).toEqual(plain.message);
          coverage.count(hinted.hint ?? 'none');
          coverage.count(plain.message === undefined ? 'absent' : 'found');
        },
      ),
      { numRuns: 300 },
    );
    coverage.expectRates({
      'at-hint': 0.05,
      'before-hint': 0.05,
      'after-hint': 0.2,
      unusable: 0.05,
      found: 0.3,
      absent: 0.2,
    });
  });
});
