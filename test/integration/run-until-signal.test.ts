// runUntilSignal in a real process: the job runs in a child (signal-child.ts), the parent
// signals it at a moment the child reports, then checks how it ended and what it left.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { jsonMessage } from '../../src/index.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import type { SignalChildMode, SignalEvent } from './signal-child.js';
import { bound } from '../support/timing.js';
import { expectSameMessages } from '../support/results/same-bytes.js';

const child = fileURLToPath(new URL('./signal-child.ts', import.meta.url));
const url = inject('rabbitmqUrl');
const real = rabbitForTests();

interface Ended {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** What the child wrote to stdout, one entry per line. */
  readonly lines: string[];
}

/**
 * Runs the child in `mode` and, each time it writes a line equal to a key of `signals` (the
 * `count`-th such line), sends it that signal. Resolves once the child has ended and its
 * output is read.
 */
function runChild(
  mode: SignalChildMode,
  args: readonly string[],
  signals: ReadonlyArray<{ after: string; count?: number; send: NodeJS.Signals }> = [],
): Promise<Ended> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', child, mode, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: string[] = [];
    let rest = '';
    proc.stdout.on('data', (data: Buffer) => {
      const parts = (rest + data.toString()).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) {
        lines.push(line);
        const seen = lines.filter((l) => l === line).length;
        for (const { after, count = 1, send } of signals) {
          if (line === after && seen === count) proc.kill(send);
        }
      }
    });
    proc.on('error', reject);
    proc.on('close', (code, signal) => resolve({ code, signal, lines }));
  });
}

/** The messages the child logged at info level or above, in order. */
function logged(ended: Ended): string[] {
  return ended.lines.flatMap((line) => {
    const match = /^log (?:info|warn|error) (.*)$/.exec(line);
    return match?.[1] === undefined ? [] : [match[1]];
  });
}

describe('a job on the real broker stopped by a signal', () => {
  // 100 sensors, 100 messages per second of event time: 100 one-second windows.
  const MESSAGES = 10_000;
  let source: string;
  let expected: Buffer[];

  beforeAll(async () => {
    source = await real.newStream('signal-source');
    const feeder = real.rabbit.target(source, { producer: 'feeder' });
    const start = Date.UTC(2026, 0, 1);
    const pending: Promise<void>[] = [];
    for (let i = 0; i < MESSAGES; i += 500) {
      const batch = Array.from({ length: 500 }, (_, j) => {
        const event: SignalEvent = { sensor: (i + j) % 100, value: ((i + j) * 7919) % 1000 };
        return jsonMessage(event, { creationTime: start + (i + j) * 10 });
      });
      pending.push(feeder.publish(BigInt(i + 499), batch));
    }
    await Promise.all(pending);
    await feeder.close();
    const reference = await real.newStream('signal-reference');
    const uninterrupted = await runChild('rabbit', [url, source, reference, 'until']);
    // Stopping by itself, the job closes and the process ends on its own, with code 0.
    expect(uninterrupted).toMatchObject({ code: 0, signal: null });
    expect(uninterrupted.lines).toContain('closed');
    expected = (await readAll(real.rabbit, reference)).map((bytes) => Buffer.from(bytes));
    expect(expected).toHaveLength(99); // the 100th window is still open
  }, bound(60_000));

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'should stop on %s with every published result confirmed and no partial step, end by that signal, and restart to the same bytes as an uninterrupted run',
    async (signal) => {
      const target = await real.newStream('signal-target');
      const stopped = await runChild(
        'rabbit',
        [url, source, target],
        [{ after: 'published', count: 20, send: signal }],
      );
      expect(stopped).toMatchObject({ code: null, signal });
      // The job stopped (its run returned) before its connection was closed.
      expect(logged(stopped).slice(-3)).toEqual([
        `stopping on ${signal}`,
        'job stopped',
        `stopped on ${signal}`,
      ]);
      expect(stopped.lines.indexOf('log info job stopped')).toBeLessThan(
        stopped.lines.indexOf('closed'),
      );

      // Every result handed to the broker was confirmed before the close: all are stored
      // (one message each). Had one been a partial step, the restart, which resumes past
      // it, would not write what an uninterrupted run writes.
      const published = stopped.lines.filter((line) => line === 'published').length;
      expect(published).toBeGreaterThanOrEqual(20);
      expect(await real.rabbit.source(target).endOffset()).toBe(BigInt(published));

      const restarted = await runChild('rabbit', [url, source, target, 'until']);
      expect(restarted).toMatchObject({ code: 0, signal: null });
      const actual = (await readAll(real.rabbit, target)).map((bytes) => Buffer.from(bytes));
      expectSameMessages(actual, expected);
    },
    bound(60_000),
  );
});

describe('a job stopped by a signal on the embedded broker', () => {
  // The job would sleep a minute before resuming, and the grace is a minute too: only the
  // backoff ending on the signal lets the child end within the test's bound. So the bound is
  // not scaled by TEST_TIME_SCALE: it must stay below that minute (21 s were needed at a load
  // average of 28, where 15 s ran out).
  const UNDER_A_MINUTE_MS = 40_000;
  it(
    'should end by SIGTERM at once when the signal comes during the backoff after a retriable error',
    async () => {
      const ended = await runChild('backoff', [], [{ after: 'restart', send: 'SIGTERM' }]);
      expect(ended).toMatchObject({ code: null, signal: 'SIGTERM' });
      expect(ended.lines).toContain('closed');
      expect(logged(ended).slice(-3)).toEqual([
        'stopping on SIGTERM',
        'job stopped',
        'stopped on SIGTERM',
      ]);
    },
    UNDER_A_MINUTE_MS,
  );

  it(
    'should end by the second signal at once while close() hangs after the first',
    async () => {
      const ended = await runChild(
        'hanging-close',
        [],
        [
          { after: 'started', send: 'SIGTERM' },
          { after: 'closed', send: 'SIGINT' },
        ],
      );
      expect(ended).toMatchObject({ code: null, signal: 'SIGINT' });
      expect(ended.lines).toContain('log warn SIGINT while stopping on SIGTERM: exiting at once');
    },
    bound(40_000),
  );

  it(
    'should close and end by SIGTERM once the grace runs out with a confirm that never comes',
    async () => {
      const ended = await runChild('no-confirm', [], [{ after: 'published', send: 'SIGTERM' }]);
      expect(ended).toMatchObject({ code: null, signal: 'SIGTERM' });
      expect(ended.lines).toContain('closed');
      expect(logged(ended).slice(-3)).toEqual([
        'stopping on SIGTERM',
        'the grace of 300 ms ran out with results unconfirmed: the next start publishes them again and the broker discards those it has',
        'stopped on SIGTERM',
      ]);
    },
    bound(40_000),
  );

  it(
    'should exit with code 143 instead of raising SIGTERM again when the user listens to it too',
    async () => {
      const ended = await runChild('other-listener', [], [{ after: 'started', send: 'SIGTERM' }]);
      expect(ended).toMatchObject({ code: 143, signal: null });
      expect(ended.lines).toContain('closed');
      // The user's listener saw the one signal sent, not a second one raised by the library.
      expect(ended.lines.filter((line) => line === 'other listener')).toHaveLength(1);
    },
    bound(40_000),
  );
});
