import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { InFlight } from '../../../../src/rabbitmq/write/publish-in-flight.js';

describe('InFlight', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const never = () => new Error('timed out');

  it('should hold a further slot until a publish in flight is answered', async () => {
    const inFlight = new InFlight(2);
    await inFlight.slot();
    const first = inFlight.open(1n, 1_000, never);
    await inFlight.slot();
    const second = inFlight.open(2n, 1_000, never);
    let third = false;
    const waiting = inFlight.slot().then(() => (third = true));
    await Promise.resolve();
    expect(third).toBe(false);
    inFlight.confirm(1n);
    await waiting;
    expect(third).toBe(true);
    await expect(first).resolves.toBeUndefined();
    inFlight.confirm(2n);
    await second;
  });

  it('should hold a batch of several slots until that many are free, and let no later caller pass it', async () => {
    const inFlight = new InFlight(3);
    await inFlight.slot(2);
    const first = inFlight.open(1n, 1_000, never);
    const second = inFlight.open(2n, 1_000, never);
    const order: string[] = [];
    const batch = inFlight.slot(3).then(() => order.push('batch of 3'));
    const single = inFlight.slot().then(() => order.push('single'));
    await Promise.resolve();
    expect(order).toEqual([]); // one slot is free: not enough for the batch, not the single's
    inFlight.confirm(1n);
    await Promise.resolve();
    expect(order).toEqual([]);
    inFlight.confirm(2n);
    await batch;
    expect(order).toEqual(['batch of 3']);
    inFlight.release(3);
    await single;
    expect(order).toEqual(['batch of 3', 'single']);
    await Promise.all([first, second]);
  });

  it('should serve waiting publishes in arrival order even when a newcomer finds a free slot', async () => {
    const inFlight = new InFlight(1);
    await inFlight.slot();
    const first = inFlight.open(1n, 1_000, never);
    const order: string[] = [];
    const second = inFlight.slot().then(() => order.push('second'));
    inFlight.confirm(1n); // frees the slot: it belongs to the publish that waited for it
    const third = inFlight.slot().then(() => order.push('third'));
    await first;
    await second;
    expect(order).toEqual(['second']);
    const secondPublish = inFlight.open(2n, 1_000, never);
    inFlight.confirm(2n);
    await secondPublish;
    await third;
    expect(order).toEqual(['second', 'third']);
  }, 5_000); // a publish served out of order would leave `second` waiting forever

  it('should reject a publish that is not answered in time, and ignore a late answer', async () => {
    const inFlight = new InFlight(1);
    await inFlight.slot();
    const publish = inFlight.open(7n, 50, () => new Error('no confirm for 7'));
    vi.advanceTimersByTime(50);
    await expect(publish).rejects.toThrow('no confirm for 7');
    expect(inFlight.has(7n)).toBe(false);
    inFlight.confirm(7n); // moot
    await inFlight.slot(); // the slot was given back
  });

  it('should fail every publish in flight at once, each with its own error', async () => {
    const inFlight = new InFlight(4);
    await inFlight.slot();
    const a = inFlight.open(1n, 1_000, never);
    await inFlight.slot();
    const b = inFlight.open(2n, 1_000, never);
    inFlight.failAll((id) => new Error(`lost ${id}`));
    await expect(a).rejects.toThrow('lost 1');
    await expect(b).rejects.toThrow('lost 2');
  });

  it('should give a slot back when the publish is never opened', async () => {
    const inFlight = new InFlight(1);
    await inFlight.slot();
    inFlight.release();
    await inFlight.slot();
    expect(inFlight.has(1n)).toBe(false);
  });
});
