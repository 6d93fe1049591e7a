// The keys a merge keeps of its released items for its records: in release order, dropped from
// the front, compacted when the dropped outnumber the kept.
import { describe, expect, it } from 'vitest';
import { ReleasedKeys } from '../../../src/engine/merge/released-keys.js';

const key = (n: number) => ({ mergeTime: 10 * n, input: n % 3, offset: BigInt(100 - n) });

describe('the released keys of a merge', () => {
  it('keeps keys in release order across forgets and compactions, and finds each input lowest offset', () => {
    const keys = new ReleasedKeys();
    for (let n = 0; n < 10; n++) keys.push(key(n), n);
    keys.forget(3); // 3 dropped, 7 kept: no compaction
    expect(keys.length).toBe(7);
    expect(keys.keyAt(0)).toEqual(key(3));
    keys.forget(5); // 8 dropped, 2 kept: compacted
    expect(keys.length).toBe(2);
    expect([keys.keyAt(0), keys.keyAt(1)]).toEqual([key(8), key(9)]);
    keys.push(key(10), 10);
    expect(keys.keyAt(2)).toEqual(key(10));

    const lowest: ({ offset: bigint; maxBefore: number } | undefined)[] = [undefined, undefined];
    keys.lowestFrom(1, lowest); // keys 9 (input 0) and 10 (input 1)
    expect(lowest).toEqual([
      { offset: 91n, maxBefore: 9 },
      { offset: 90n, maxBefore: 10 },
    ]);
    keys.forget(99);
    expect(keys.length).toBe(0);
  });
});
