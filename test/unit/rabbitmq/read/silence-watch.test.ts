// A reader's node that sends nothing is taken as stalled within the bound, and only then: a
// quiet stream on a live node (it answers the probe) never is, nor is one whose chunks or
// heartbeats keep coming. Driven by a fake clock; nothing connects.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { SilenceWatch } from '../../../../src/rabbitmq/read/silence-watch.js';

const STALL_MS = 10_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A watch whose probes and stall are counted; `answer` says whether the node answers probes. */
function watched(answer: boolean) {
  const seen = { probes: 0, stalledAfterMs: undefined as number | undefined };
  const watch = new SilenceWatch(STALL_MS, {
    probe: () => {
      seen.probes++;
      // A live node's answer comes back a few milliseconds later, as bytes on the socket.
      if (answer) setTimeout(() => watch.heard(), 5);
    },
    stalled: (silentMs) => (seen.stalledAfterMs = silentMs),
  });
  return { watch, seen };
}

describe('SilenceWatch', () => {
  it('should take a node that answers nothing as stalled between the bound and a tenth past it', async () => {
    const { watch, seen } = watched(false);
    await vi.advanceTimersByTimeAsync(STALL_MS - 1);
    expect(seen.probes, 'probed halfway through the silence').toBe(1);
    expect(seen.stalledAfterMs).toBeUndefined();
    await vi.advanceTimersByTimeAsync(STALL_MS / 10 + 1);
    expect(seen.stalledAfterMs).toBeGreaterThanOrEqual(STALL_MS);
    expect(seen.stalledAfterMs).toBeLessThanOrEqual(STALL_MS * 1.1);
    // Once: it stopped.
    await vi.advanceTimersByTimeAsync(10 * STALL_MS);
    expect(seen.probes).toBe(1);
    watch.stop();
  });

  it('should never take a quiet stream on a live node as stalled: the node answers each probe', async () => {
    const { watch, seen } = watched(true);
    await vi.advanceTimersByTimeAsync(60 * STALL_MS);
    expect(seen.stalledAfterMs).toBeUndefined();
    // A probe per half bound of silence, no more.
    expect(seen.probes).toBeGreaterThanOrEqual(100);
    expect(seen.probes).toBeLessThanOrEqual(120);
    watch.stop();
  });

  it('should neither probe nor stall while chunks keep coming', async () => {
    const { watch, seen } = watched(false);
    for (let i = 0; i < 200; i++) {
      await vi.advanceTimersByTimeAsync(STALL_MS / 4);
      watch.heard();
    }
    expect(seen.probes).toBe(0);
    expect(seen.stalledAfterMs).toBeUndefined();
    watch.stop();
  });

  it('should count a frozen node from its last byte: chunks, then nothing', async () => {
    const { watch, seen } = watched(false);
    for (let i = 0; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(1_000);
      watch.heard();
    }
    await vi.advanceTimersByTimeAsync(STALL_MS * 1.1);
    expect(seen.stalledAfterMs).toBeGreaterThanOrEqual(STALL_MS);
    expect(seen.stalledAfterMs).toBeLessThanOrEqual(STALL_MS * 1.1);
    watch.stop();
  });

  it('should not take a busy event loop for a frozen node: the probe goes out once it runs again', async () => {
    const { watch, seen } = watched(true);
    // The loop was blocked for three bounds (a long synchronous step): nothing ran meanwhile.
    vi.setSystemTime(Date.now() + 3 * STALL_MS);
    await vi.advanceTimersByTimeAsync(STALL_MS);
    expect(seen.probes).toBeGreaterThanOrEqual(1);
    expect(seen.stalledAfterMs).toBeUndefined();
    watch.stop();
  });

  it('should do nothing once stopped', async () => {
    const { watch, seen } = watched(false);
    watch.stop();
    await vi.advanceTimersByTimeAsync(10 * STALL_MS);
    expect(seen).toEqual({ probes: 0, stalledAfterMs: undefined });
  });
});
