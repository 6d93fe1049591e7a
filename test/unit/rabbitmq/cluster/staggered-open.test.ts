// Connection attempts to several nodes, staggered "happy eyeballs" fashion: a node that accepts
// and never answers costs the stagger, not the timeout. Driven by a fake clock over fake
// sockets: each attempt is a socket the test makes answer, fail or hang.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  NEXT_NODE_AFTER_MS,
  openStaggered,
  type StaggerOptions,
} from '../../../../src/rabbitmq/cluster/staggered-open.js';

const TIMEOUT_MS = 10_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

class Refused extends Error {}

/** A socket being opened to `node`: the test decides when its handshake ends, and how. */
interface FakeSocket {
  readonly node: string;
  readonly startedAt: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  destroyed: boolean;
  answer(): void;
  fail(error?: Error): void;
}

/** Opens fake sockets, keeping each one it made; an aborted one fails and is destroyed. */
function fakeNetwork() {
  const sockets: FakeSocket[] = [];
  const start = Date.now();
  const open = (node: string, timeoutMs: number, signal: AbortSignal): Promise<FakeSocket> =>
    new Promise((resolve, reject) => {
      // As openConnection: the attempt's own deadline and its signal fail it.
      const timer = setTimeout(() => socket.fail(new Error(`${node} timed out`)), timeoutMs);
      const socket: FakeSocket = {
        node,
        startedAt: Date.now() - start,
        timeoutMs,
        signal,
        destroyed: false,
        answer: () => {
          clearTimeout(timer);
          resolve(socket);
        },
        fail: (error = new Error(`${node} failed`)) => {
          clearTimeout(timer);
          socket.destroyed = true;
          reject(error);
        },
      };
      sockets.push(socket);
      const onAbort = (): void => socket.fail(new Error(`${node} aborted`));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort);
    });
  const discard = (socket: FakeSocket): void => void (socket.destroyed = true);
  const socket = (node: string): FakeSocket => {
    const found = sockets.find((s) => s.node === node);
    if (found === undefined) throw new Error(`no attempt was made to ${node}`);
    return found;
  };
  return { sockets, open, discard, socket };
}

const options = (more: Partial<StaggerOptions> = {}): StaggerOptions => ({
  timeoutMs: TIMEOUT_MS,
  final: (error) => error instanceof Refused,
  allFailed: (errors) => new Error(`all failed: ${errors.map((e) => String(e)).join('; ')}`),
  ...more,
});

describe('openStaggered', () => {
  it('should try the next node after the stagger when the first does not answer, and keep the first to answer', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['frozen', 'live', 'spare'], net.open, net.discard, options());
    await vi.advanceTimersByTimeAsync(NEXT_NODE_AFTER_MS - 1);
    expect(net.sockets.map((s) => s.node)).toEqual(['frozen']);
    await vi.advanceTimersByTimeAsync(1);
    expect(net.sockets.map((s) => [s.node, s.startedAt])).toEqual([
      ['frozen', 0],
      ['live', NEXT_NODE_AFTER_MS],
    ]);
    net.socket('live').answer();

    const won = await racing;
    expect(won.winner).toBe('live');
    expect(won.opened).toBe(net.socket('live'));
    expect(won.passedOver).toEqual(['frozen']);
    // The loser is given up at once, the spare never tried, and nothing is left running.
    expect(net.socket('frozen').signal.aborted).toBe(true);
    expect(net.socket('frozen').destroyed).toBe(true);
    expect(net.socket('live').destroyed).toBe(false);
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(net.sockets).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('should keep the first node when it answers within the stagger, trying no other', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['a', 'b'], net.open, net.discard, options());
    await vi.advanceTimersByTimeAsync(5);
    net.socket('a').answer();
    expect((await racing).winner).toBe('a');
    expect((await racing).passedOver).toEqual([]);
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(net.sockets).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('should start the next node at once when one fails, without waiting out the stagger', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['down', 'live'], net.open, net.discard, options());
    await vi.advanceTimersByTimeAsync(3);
    net.socket('down').fail(); // connection refused
    await vi.advanceTimersByTimeAsync(0);
    expect(net.socket('live').startedAt).toBe(3);
    net.socket('live').answer();
    expect(await racing).toMatchObject({ winner: 'live', passedOver: ['down'] });
  });

  it('should close a loser that answers after the winner', async () => {
    const net = fakeNetwork();
    // An opener that ignores its signal: a handshake that completes anyway.
    const deaf = (node: string, timeoutMs: number) =>
      net.open(node, timeoutMs, new AbortController().signal);
    const racing = openStaggered(['slow', 'fast'], deaf, net.discard, options());
    await vi.advanceTimersByTimeAsync(NEXT_NODE_AFTER_MS);
    net.socket('fast').answer();
    expect((await racing).winner).toBe('fast');
    net.socket('slow').answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(net.socket('slow').destroyed).toBe(true);
    expect(net.socket('fast').destroyed).toBe(false);
  });

  it('should keep the whole race within the timeout: every attempt gets what is left of it', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['a', 'b', 'c'], net.open, net.discard, options());
    const failed = expect(racing).rejects.toThrow(
      'all failed: Error: a timed out; Error: b timed out; Error: c timed out',
    );
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    await failed;
    expect(net.sockets.map((s) => [s.node, s.startedAt, s.timeoutMs])).toEqual([
      ['a', 0, TIMEOUT_MS],
      ['b', NEXT_NODE_AFTER_MS, TIMEOUT_MS - NEXT_NODE_AFTER_MS],
      ['c', 2 * NEXT_NODE_AFTER_MS, TIMEOUT_MS - 2 * NEXT_NODE_AFTER_MS],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  // CI, 2026-12-08: a source's error read "within 299 ms" for `timeoutMs: 300`, the clock having
  // ticked between the race's deadline and its first attempt.
  it('should give the first node the whole timeout, however the clock ticks before it starts', async () => {
    const net = fakeNetwork();
    let now = Date.now();
    vi.spyOn(Date, 'now').mockImplementation(() => now++);
    const racing = openStaggered(['a'], net.open, net.discard, options());
    net.socket('a').answer();
    await racing;
    expect(net.socket('a').timeoutMs).toBe(TIMEOUT_MS);
  });

  it('should shorten the stagger to the timeout shared among the nodes, so that each one is tried', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['a', 'b'], net.open, net.discard, options({ timeoutMs: 300 }));
    const failed = expect(racing).rejects.toThrow('all failed');
    await vi.advanceTimersByTimeAsync(300);
    await failed;
    expect(net.sockets.map((s) => [s.node, s.startedAt, s.timeoutMs])).toEqual([
      ['a', 0, 300],
      ['b', 150, 150],
    ]);
  });

  it('should fail at once on a refusal, giving up the attempts under way and starting no other', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(['a', 'b', 'c'], net.open, net.discard, options());
    await vi.advanceTimersByTimeAsync(NEXT_NODE_AFTER_MS);
    const refusal = new Refused('access refused');
    net.socket('b').fail(refusal);
    await expect(racing).rejects.toBe(refusal);
    expect(net.socket('a').signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(net.sockets.map((s) => s.node)).toEqual(['a', 'b']);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('should give every attempt up when its signal aborts, and start no other', async () => {
    const net = fakeNetwork();
    const controller = new AbortController();
    const racing = openStaggered(
      ['a', 'b', 'c'],
      net.open,
      net.discard,
      options({ signal: controller.signal }),
    );
    await vi.advanceTimersByTimeAsync(NEXT_NODE_AFTER_MS);
    controller.abort();
    await expect(racing).rejects.toThrow('all failed: Error: a aborted; Error: b aborted');
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(net.sockets.map((s) => [s.node, s.destroyed])).toEqual([
      ['a', true],
      ['b', true],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('should try the one attempt with a signal aborted before the start, which fails in its own words', async () => {
    const net = fakeNetwork();
    const racing = openStaggered(
      ['a', 'b'],
      net.open,
      net.discard,
      options({ signal: AbortSignal.abort() }),
    );
    await expect(racing).rejects.toThrow('all failed: Error: a aborted');
    expect(net.sockets).toHaveLength(1);
  });
});
