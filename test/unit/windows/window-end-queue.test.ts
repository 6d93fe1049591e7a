import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WindowEndQueue } from '../../../src/windows/window-end-queue.js';

/** One step: file a window under `end` (its creation order is the step's index), or take the first. */
const stepArb = fc.oneof(
  {
    arbitrary: fc.record({ file: fc.constant(true), end: fc.integer({ min: 0, max: 40 }) }),
    weight: 3,
  },
  { arbitrary: fc.record({ file: fc.constant(false), end: fc.constant(0) }), weight: 2 },
);

describe('the queue of windows by end', () => {
  it('gives windows back in (end, creation) order, however they were filed, through its ring and its heap', () => {
    let grownAndWrapped = 0;
    let outOfOrder = 0;
    let runs = 0;
    fc.assert(
      fc.property(
        // Mostly ascending ends (the ring) with some earlier ones (the heap).
        fc.array(stepArb, { minLength: 1, maxLength: 200, size: 'max' }),
        fc.integer({ min: 0, max: 3 }),
        (steps, drift) => {
          runs++;
          const queue = new WindowEndQueue();
          const filed: { id: number; end: number }[] = [];
          let base = 0;
          let lastEnd = -Infinity;
          let taken = 0;
          let most = 0;
          let filedAfterTaking = 0;
          steps.forEach((step, id) => {
            if (step.file) {
              base += drift;
              const end = base + (step.end % 10 === 0 ? -step.end : step.end % 3);
              if (end < lastEnd) outOfOrder++;
              lastEnd = Math.max(lastEnd, end);
              queue.push(id, end, id);
              filed.push({ id, end });
              most = Math.max(most, filed.length);
              if (taken > 0) filedAfterTaking++;
              return;
            }
            if (filed.length === 0) return;
            // The expected first: least end, then least creation order.
            filed.sort((a, b) => a.end - b.end || a.id - b.id);
            const first = filed.shift() as { id: number; end: number };
            expect(queue.peekEnd()).toBe(first.end);
            expect(queue.pop()).toBe(first.id);
            taken++;
          });
          // Past its first 16 entries, with entries filed behind taken ones: the ring grew and wrapped.
          if (most > 16 && filedAfterTaking > 16) grownAndWrapped++;
          expect(queue.size).toBe(filed.length);
          filed.sort((a, b) => a.end - b.end || a.id - b.id);
          for (const { id } of filed) expect(queue.pop()).toBe(id);
          expect(queue.size).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
    // Floors: windows filed out of order (the heap) and rings that wrapped and grew were seen.
    expect(runs).toBe(300);
    expect(outOfOrder).toBeGreaterThan(100);
    expect(grownAndWrapped).toBeGreaterThan(100);
  });
});
