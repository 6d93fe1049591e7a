// The event-time watermark (src/windows/watermark.ts): the latest event time less the
// disorder allowed, never moved back, and restored from a result to the same value.
import { describe, expect, it } from 'vitest';
import { Watermark } from '../../../src/windows/watermark.js';

describe('the watermark', () => {
  it('is the latest event time less maxOutOfOrderness, -Infinity before any', () => {
    const watermark = new Watermark(5_000);
    expect(watermark.value).toBe(Number.NEGATIVE_INFINITY);
    watermark.advance(60_000);
    expect(watermark.value).toBe(55_000);
    // A late event cannot move it back.
    watermark.advance(10_000);
    expect(watermark.value).toBe(55_000);
    watermark.advance(61_000);
    expect(watermark.value).toBe(56_000);
  });

  it('comes back from a recorded value to the same value, and goes on from it', () => {
    const watermark = new Watermark(5_000);
    watermark.restore(55_000);
    expect(watermark.value).toBe(55_000);
    watermark.advance(59_000);
    expect(watermark.value).toBe(55_000);
    watermark.advance(61_000);
    expect(watermark.value).toBe(56_000);
  });
});
