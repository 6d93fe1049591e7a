import { describe, expect, it } from 'vitest';
import { InputMerge } from '../../../src/engine/merge/input-merge.js';

describe('the merge of several inputs, by example', () => {
  it('holds a fast input back until the slow one passes, then releases by event time', () => {
    const merge = new InputMerge<string>(2, 0);
    merge.offer(1, 0n, 50, 'b50');
    merge.offer(1, 1n, 90, 'b90');
    expect(merge.release()).toEqual([]); // input 0 has said nothing yet
    merge.offer(0, 0n, 60, 'a60');
    expect(merge.release().map((item) => item.value)).toEqual(['b50']);
    merge.offer(0, 1n, 100, 'a100');
    // The bound is 90 (input 1's watermark): an item at it could still be passed.
    expect(merge.release().map((item) => [item.position, item.value])).toEqual([[1n, 'a60']]);
    merge.offer(1, 2n, 120, 'b120');
    expect(merge.release().map((item) => [item.position, item.value])).toEqual([[2n, 'b90']]);
  });

  it('counts what each input holds, and tells the inputs ahead of the bound from the one at it', () => {
    const merge = new InputMerge<string>(2, 0);
    merge.offer(0, 0n, 100, 'a100');
    merge.offer(0, 1n, 200, 'a200');
    merge.offer(1, 0n, 150, 'b150');
    expect([merge.heldBy(0), merge.heldBy(1)]).toEqual([2, 1]);
    // The bound is 150, input 1's watermark: input 0 (at 200) is ahead, input 1 holds it back.
    expect([merge.isAhead(0), merge.isAhead(1)]).toEqual([true, false]);
    expect(merge.release().map((item) => item.value)).toEqual(['a100']);
    expect([merge.heldBy(0), merge.heldBy(1)]).toEqual([1, 1]);
    merge.offer(1, 1n, 250, 'b250');
    expect([merge.isAhead(0), merge.isAhead(1)]).toEqual([false, true]);
    expect(merge.release().map((item) => item.value)).toEqual(['b150']);
    expect([merge.heldBy(0), merge.heldBy(1)]).toEqual([1, 1]);
  });

  it('raises a late item to its input watermark, and an input back from idle to a floor', () => {
    const merge = new InputMerge<string>(2, 10);
    merge.offer(0, 0n, 100, 'a100');
    merge.offer(0, 1n, 20, 'late'); // below 100 - 10
    merge.offer(1, 0n, 200, 'b200');
    merge.leaveOut(0);
    const released = merge.release();
    expect(released.map((item) => [item.value, item.mergeTime])).toEqual([
      ['late', 90],
      ['a100', 100],
    ]);
    merge.leaveOut(1);
    merge.offer(0, 2n, 150, 'back'); // the bound reached meanwhile: 190
    expect(merge.recordAt(merge.position).inputs[0]?.floors).toEqual([{ offset: 2n, floor: 190 }]);
  });

  it('places an item of several times by the least, and moves its watermark by the greatest', () => {
    const merge = new InputMerge<string>(2, 0);
    // A result of input 0 whose values span 10..500: placed at 10, its input's watermark 500.
    merge.offer(0, 0n, 10, 'a10..500', 500);
    merge.offer(1, 0n, 300, 'b300');
    // The bound is 300 (input 1): a10..500 goes first, before b300, though it holds 500.
    expect(merge.release().map((item) => [item.value, item.mergeTime])).toEqual([['a10..500', 10]]);
    merge.offer(0, 1n, 200, 'a200'); // below its input's watermark (500): merged at 500
    merge.offer(1, 1n, 600, 'b600');
    // The bound is 500 now: b300 goes; a200, at the bound, waits.
    expect(merge.release().map((item) => [item.value, item.mergeTime])).toEqual([['b300', 300]]);
    // A record at a200 restores input 0's latest time before it: 500, not 10.
    expect(merge.recordAt(2n).inputs[0]).toMatchObject({ from: 1n, maxEventTime: 500 });
  });

  it('releases below the highest watermark once every input is left out, in either order', () => {
    const released = (order: readonly number[]): string[] => {
      const merge = new InputMerge<string>(2, 0);
      merge.offer(0, 0n, 100, 'a100');
      merge.offer(0, 1n, 300, 'a300');
      merge.offer(1, 0n, 200, 'b200');
      const values: string[] = [];
      for (const input of order) {
        merge.leaveOut(input);
        values.push(...merge.release().map((item) => item.value));
      }
      return values;
    };
    expect(released([0, 1])).toEqual(['a100', 'b200']);
    expect(released([1, 0])).toEqual(['a100', 'b200']);
  });

  it('records a floor at the next offset of an input left out below the bound reached', () => {
    const merge = new InputMerge<string>(2, 0);
    merge.offer(0, 0n, 100, 'a100');
    merge.offer(1, 0n, 50, 'b50');
    merge.leaveOut(1);
    merge.release();
    merge.offer(0, 1n, 400, 'a400');
    merge.release(); // below 400: a100 (b50 first)
    // A restart reads input 1 again from 1: what it offers there must come after a100.
    expect(merge.recordAt(merge.position).inputs[1]).toEqual({
      from: 1n,
      maxEventTime: 50,
      floors: [{ offset: 1n, floor: 400 }],
    });
  });

  it('refuses what no caller may ask', () => {
    expect(() => new InputMerge(0, 0)).toThrow('a merge needs at least one input, given: 0');
    const merge = new InputMerge<null>(1, 0);
    expect(() => merge.offer(1, 0n, 0, null)).toThrow("input 1 is not one of the merge's 1");
    merge.offer(0, 5n, 0, null);
    expect(() => merge.offer(0, 5n, 1, null)).toThrow(
      'input 0: offset 5 offered after 5; offsets must increase',
    );
    expect(() => merge.recordAt(1n)).toThrow('a record at position 1: only 0..0 can be recorded');
    expect(() => new InputMerge(2, 0, merge.recordAt(0n))).toThrow(
      'the record holds 1 inputs, the merge has 2',
    );
  });
});
