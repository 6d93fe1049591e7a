import { describe, expect, it } from 'vitest';
import { KeyedWindows } from '../../../src/windows/keyed-windows.js';

describe('the keyed windows of event-time jobs', () => {
  it('drops closed windows queued behind a long-open older one, so memory follows the open windows', () => {
    const windows = new KeyedWindows<number>();
    const oldest = windows.create('long-lived', 0, 10, 0n, Number.NEGATIVE_INFINITY, 0);
    for (let i = 1; i <= 100_000; i++) {
      const churn = windows.create(`key-${i}`, i, i + 10, BigInt(i), i, 0);
      windows.remove(churn);
    }
    expect(windows.size).toBe(1);
    expect(windows.queued).toBeLessThanOrEqual(1025);
    expect(windows.oldestOpen()).toBe(oldest);
  });

  it('keeps the creation order of the open windows through the compaction of its queue', () => {
    const windows = new KeyedWindows<number>();
    const kept = [];
    for (let i = 0; i < 5_000; i++) {
      const window = windows.create(`key-${i}`, i, i + 10, BigInt(i), i, 0);
      if (i % 7 === 0) kept.push(window);
      else windows.remove(window);
    }
    expect([...windows.openInCreationOrder()]).toEqual(kept);
    expect(windows.queued).toBeLessThan(5_000);
  });
});
