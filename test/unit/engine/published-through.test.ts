// What a producer's results cover of its source, read alike by the run loop, `status` and
// `skip`: the last step's last offset, or -1 when the producer never published.
import { describe, expect, it } from 'vitest';
import { nextUnpublished, publishedThrough } from '../../../src/engine/resume/published-through.js';
import { skipsThrough } from '../../../src/engine/skip-request.js';

describe('what a producer published through', () => {
  it('is the last offset once it published, -1 before, offset 0 included', () => {
    expect(publishedThrough(41n, true)).toBe(41n);
    expect(publishedThrough(0n, true)).toBe(0n);
    // A last id of 0 on a target of the earlier scheme: "never" unless the scan found one.
    expect(publishedThrough(0n, false)).toBe(-1n);
  });

  it('goes on with new messages after it, or from the first one', () => {
    expect(nextUnpublished(41n)).toBe(42n);
    expect(nextUnpublished(0n)).toBe(1n);
    expect(nextUnpublished(-1n)).toBe('first');
  });

  it("steps over a failing message up to the operator's request or what it covers, the higher", () => {
    expect(skipsThrough(undefined, -1n)).toBe(-1n);
    expect(skipsThrough(undefined, 41n)).toBe(41n);
    expect(skipsThrough(50n, 41n)).toBe(50n);
    // A request the results passed already changes nothing.
    expect(skipsThrough(30n, 41n)).toBe(41n);
    expect(skipsThrough(0n, -1n)).toBe(0n);
  });
});
