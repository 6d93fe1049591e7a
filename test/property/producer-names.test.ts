// Issue 17 item 3: the producer names derived for a partitioned job's loops are injective, so
// two jobs never share one (examples in test/component/running/job-identity.test.ts).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { partitionProducer } from '../../src/index.js';

describe('derived producer names', () => {
  it('are injective over job and partition names, whatever characters they hold (property)', () => {
    // Few characters, the separators and escapes among them; and with each pair (a, b-c) its
    // twin (a-b, c), which the former `${job}-${stream}` named alike.
    const part = fc.string({ unit: fc.constantFrom('a', '-', '@', '%', '2', '5', '4', '0') });
    const pairs = fc
      .array(fc.tuple(part, part, part), { minLength: 1, maxLength: 15 })
      .map((triples) => [
        ...new Map(
          triples
            .flatMap(([a, b, c]): [string, string][] => [
              [a, `${b}-${c}`],
              [`${a}-${b}`, c],
            ])
            .map((pair) => [JSON.stringify(pair), pair]),
        ).values(),
      ]);
    let checked = 0;
    let withSeparators = 0;
    let oldCollisions = 0;
    fc.assert(
      fc.property(pairs, (jobs) => {
        checked += jobs.length;
        withSeparators += jobs.filter(([job]) => /[@%]/.test(job)).length;
        oldCollisions += jobs.length - new Set(jobs.map(([job, s]) => `${job}-${s}`)).size;
        const names = jobs.map(([job, stream]) => partitionProducer(job, stream));
        expect(new Set(names).size).toBe(jobs.length);
      }),
      { numRuns: 300, seed: 17 },
    );
    expect(checked).toBeGreaterThan(2_000);
    expect(withSeparators).toBeGreaterThan(500);
    expect(oldCollisions).toBeGreaterThan(1_000);
  });
});
