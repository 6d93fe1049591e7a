// showProgress against a job's events, drawn on a stream that says it is (or is not) a terminal.
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { lastWriteId } from '../../../src/result-format/publishing-id.js';
import { showProgress } from '../../../src/cli/index.js';
import { PublishError } from '../../../src/common/errors.js';
import { JobEvents } from '../../../src/api/job-events.js';

/** A writable that records what is written, a terminal or not. */
function screen(isTTY: boolean): { isTTY: boolean; text: string; write(chunk: string): boolean } {
  return {
    isTTY,
    text: '',
    write(chunk: string) {
      this.text += chunk;
      return true;
    },
  };
}

const CLEAR_LINE = '\r\x1b[2K';

function job(): JobEvents {
  return new JobEvents((name, error) => {
    throw new Error(`listener of ${name} threw: ${String(error)}`);
  });
}

/** A backlog of 100 messages from offset 100, read in chunks of 25. */
function catchUp(events: JobEvents, chunks = 4): void {
  events.emit('started', {
    lastPublishingId: lastWriteId(99n),
    lastOffset: 99n,
    from: 100n,
    sourceEnd: 200n,
    restarts: 0,
  });
  for (let i = 0; i < chunks; i++) {
    events.emit('read', { firstOffset: 100n + BigInt(25 * i), messages: 25, timestamp: 0 });
  }
}

const asStream = (s: ReturnType<typeof screen>) => s as unknown as NodeJS.WritableStream;

describe('showProgress', () => {
  it('should draw a bar with counts and an ETA on a terminal and clear the line when caught up', () => {
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 0 });
    catchUp(events, 2);
    expect(tty.text).toContain('catching up [');
    expect(tty.text).toContain('25% 25/100 ETA');
    expect(tty.text).toContain('50% 50/100 ETA');
    expect(tty.text).toContain('\x1b[32m'); // the bar is green
    events.emit('caughtUp', { offset: 200n });
    expect(tty.text.endsWith(CLEAR_LINE)).toBe(true);
    expect(events.has('read')).toBe(false); // its listeners are gone
  });

  it('should redraw at most once per interval before the end', () => {
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 3_600_000 });
    catchUp(events, 3);
    expect(tty.text.split('catching up').length - 1).toBe(1);
  });

  it('should draw the frame that reaches the end whatever the interval: 100% until caught up', () => {
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 3_600_000 });
    catchUp(events);
    expect(tty.text.split('catching up').length - 1).toBe(2);
    expect(tty.text).toMatch(/100% 100\/100 ETA [^\n]*$/);
  });

  it('should show no ETA until the rate was measured over a second of reading', () => {
    vi.useFakeTimers({ toFake: ['Date'], now: 0 });
    onTestFinished(() => void vi.useRealTimers());
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 0 });
    events.emit('started', {
      lastPublishingId: 0n,
      lastOffset: undefined,
      from: 0n,
      sourceEnd: 1000n,
      restarts: 0,
    });
    const frames: string[] = [];
    const read = (afterMs: number, firstOffset: bigint, messages: number): void => {
      vi.advanceTimersByTime(afterMs);
      events.emit('read', { firstOffset, messages, timestamp: 0 });
      frames.push(tty.text.slice(tty.text.lastIndexOf('catching up')));
    };
    read(3000, 0n, 10); // the first chunk, 3 s after the start (connecting, subscribing)
    read(500, 10n, 40); // half a second of reading: too little to tell
    read(500, 50n, 50); // 90 messages in the second since the first chunk
    expect(frames.map((frame) => frame.replace(/^.*\] /, ''))).toEqual([
      '1% 10/1000 ETA -',
      '5% 50/1000 ETA -',
      '10% 100/1000 ETA 10.0 s', // 900 left at 90 a second
    ]);
  });

  it("should clear its line before a listener added earlier writes on 'caughtUp' or 'restart'", () => {
    const events = job();
    const tty = screen(true);
    events.on('restart', () => tty.write('restarting\n'));
    events.on('caughtUp', () => tty.write('caught up\n'));
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 0 });
    catchUp(events, 2);
    events.emit('restart', {
      error: new PublishError('s', 1n, true, 'lost'),
      delayMs: 0,
      restarts: 1,
    });
    expect(tty.text.split(CLEAR_LINE).slice(-2)).toEqual([
      expect.stringMatching(/50% 50\/100 ETA [^\n]+$/),
      'restarting\n',
    ]);
    catchUp(events, 4);
    events.emit('caughtUp', { offset: 200n });
    expect(tty.text.split(CLEAR_LINE).slice(-2)).toEqual([
      expect.stringMatching(/100% 100\/100 ETA [^\n]+$/),
      'caught up\n',
    ]);
  });

  it('should count from the first chunk read when the job starts from the first offset', () => {
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 0 });
    events.emit('started', {
      lastPublishingId: 0n,
      lastOffset: undefined,
      from: 'first',
      sourceEnd: 60n,
      restarts: 0,
    });
    events.emit('read', { firstOffset: 40n, messages: 10, timestamp: 0 });
    expect(tty.text).toContain('50% 10/20 ETA');
  });

  it('should stay silent on a stream that is not a terminal, and with CI set', () => {
    for (const [isTTY, env] of [
      [false, {}],
      [true, { CI: 'true' }],
    ] as const) {
      const events = job();
      const out = screen(isTTY);
      showProgress(events, { stream: asStream(out), env, intervalMs: 0 });
      catchUp(events);
      events.emit('caughtUp', { offset: 200n });
      expect(out.text).toBe('');
      // Nobody listens: the runner does not even ask for the source's end.
      expect(events.has('caughtUp')).toBe(false);
    }
  });

  it('should draw without colour when NO_COLOR is set', () => {
    const events = job();
    const tty = screen(true);
    showProgress(events, { stream: asStream(tty), env: { NO_COLOR: '1' }, intervalMs: 0 });
    catchUp(events);
    expect(tty.text).toContain('100% 100/100');
    expect(tty.text.replaceAll(CLEAR_LINE, '')).not.toContain('\x1b');
  });

  it('should clear the bar and stop listening when its stop function is called', () => {
    const events = job();
    const tty = screen(true);
    const stop = showProgress(events, { stream: asStream(tty), env: {}, intervalMs: 0 });
    catchUp(events, 1);
    stop();
    expect(tty.text.endsWith(CLEAR_LINE)).toBe(true);
    const before = tty.text;
    catchUp(events);
    expect(tty.text).toBe(before);
  });
});
