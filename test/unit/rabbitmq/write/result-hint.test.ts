// When a RabbitMQ target stores its result hint (src/rabbitmq/write/result-hint.ts): never on a
// publish's way, at most once per interval, after the producer pauses; and under which reference.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_REFERENCE_BYTES } from '../../../../src/common/stream-protocol.js';
import {
  hintReference,
  ResultHintKeeper,
  type HintStore,
} from '../../../../src/rabbitmq/write/result-hint.js';

const EVERY_MS = 1_000;
const QUIET_MS = 50;

/** A hint store that records what it was asked; the committed chunk id counts up. */
function recordingStore(): HintStore & { saved: bigint[]; asked: number; fail: boolean } {
  const store = {
    saved: [] as bigint[],
    asked: 0,
    fail: false,
    committedChunkId(): Promise<bigint> {
      store.asked++;
      return store.fail
        ? Promise.reject(new Error('lost'))
        : Promise.resolve(BigInt(store.asked * 100));
    },
    save(offset: bigint): Promise<void> {
      store.saved.push(offset);
      return Promise.resolve();
    },
  };
  return store;
}

function keeperOf(store: HintStore): ResultHintKeeper {
  const keeper = new ResultHintKeeper(store, { everyMs: EVERY_MS, quietMs: QUIET_MS });
  keeper.enable();
  return keeper;
}

describe('the result hint keeper', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stores nothing for a target whose resume point was never read', async () => {
    const store = recordingStore();
    const keeper = new ResultHintKeeper(store, { everyMs: EVERY_MS, quietMs: QUIET_MS });
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(10 * EVERY_MS);
    expect(store.asked).toBe(0);
  });

  it('stores nothing within the interval after the first confirm, then the chunk id asked once quiet', async () => {
    const store = recordingStore();
    const keeper = keeperOf(store);
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(EVERY_MS - 1);
    expect(store.asked).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(store.saved).toEqual([100n]);
    // Nothing confirmed since: nothing more.
    await vi.advanceTimersByTimeAsync(10 * EVERY_MS);
    expect(store.asked).toBe(1);
    keeper.close();
  });

  it('waits for the producer to pause, taking the hint after its latest result', async () => {
    const store = recordingStore();
    const keeper = keeperOf(store);
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(EVERY_MS - 20);
    keeper.confirmed(); // 20 ms before the store is due: it waits 50 ms from here
    await vi.advanceTimersByTimeAsync(QUIET_MS - 1);
    expect(store.asked).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(store.asked).toBe(1);
    keeper.close();
  });

  it('stores about once per interval for a producer that never pauses', async () => {
    const store = recordingStore();
    const keeper = keeperOf(store);
    const confirms = setInterval(() => {
      keeper.confirmed();
    }, 10);
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(10 * EVERY_MS);
    clearInterval(confirms);
    // Each store waits at most 4 quiet periods past its time: 10 s hold 8 to 10 of them.
    expect(store.asked).toBeGreaterThanOrEqual(8);
    expect(store.asked).toBeLessThanOrEqual(10);
    keeper.close();
  });

  it('lets a failed store go and tries again after the next confirm', async () => {
    const store = recordingStore();
    const keeper = keeperOf(store);
    store.fail = true;
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(EVERY_MS);
    expect(store.asked).toBe(1);
    expect(store.saved).toEqual([]);
    store.fail = false;
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(EVERY_MS);
    expect(store.saved).toEqual([200n]);
    keeper.close();
  });

  it('stores no hint of an empty stream, and nothing once closed', async () => {
    const empty = { ...recordingStore(), committedChunkId: () => Promise.resolve(-1n) };
    const keeper = keeperOf(empty);
    keeper.confirmed();
    await vi.advanceTimersByTimeAsync(EVERY_MS);
    expect(empty.saved).toEqual([]);
    const store = recordingStore();
    const closed = keeperOf(store);
    closed.confirmed();
    closed.close();
    await vi.advanceTimersByTimeAsync(10 * EVERY_MS);
    expect(store.asked).toBe(0);
  });
});

describe('the result hint reference', () => {
  it('names the target stream and producer, and hashes them when too long for the broker', () => {
    expect(hintReference('minutes', 'stage-1')).toBe('stream-windows hint ["minutes","stage-1"]');
    expect(hintReference('a', 'b"c')).not.toBe(hintReference('a"', 'c'));
    const long = hintReference('t'.repeat(200), 'p'.repeat(100));
    expect(long).toMatch(/^stream-windows hint sha256:[0-9a-f]{64}$/);
    expect(Buffer.byteLength(long)).toBeLessThanOrEqual(MAX_REFERENCE_BYTES);
    expect(long).not.toBe(hintReference('t'.repeat(200), 'q'.repeat(100)));
  });
});
