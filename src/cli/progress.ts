import type { JobEventName, JobListener, ListenerOptions } from '../api/job-events.js';
import { timerMs } from '../common/timer-duration.js';
import { colourWanted, styleFor } from './style.js';
import { humanDuration } from './table.js';

/** What `showProgress` needs of a job: its events (a `Runner` has them). */
export interface ObservableJob {
  /** Calls `listener` on each event `name` of the job; returns the function that stops it. */
  on<K extends JobEventName>(
    name: K,
    listener: JobListener<K>,
    options?: ListenerOptions,
  ): () => void;
}

/** The options of `showProgress`: where the bar is drawn, and how often. */
export interface ProgressOptions {
  /** Where the bar is drawn, default `process.stderr`; nothing is drawn unless it is a terminal. */
  readonly stream?: NodeJS.WritableStream & { readonly isTTY?: boolean };
  /** Read for CI (set: no bar) and NO_COLOR (set: no colour); default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Least time between two redraws, default 100 ms (at most 10 a second); 0 draws every read. */
  readonly intervalMs?: number;
}

const BAR_WIDTH = 20;
/**
 * The ETA waits for a rate measured over this much reading, from the first chunk read on: the
 * time before it (connecting, subscribing) is no measure of reading, and neither are a few
 * chunks that came at once.
 */
const RATE_WINDOW_MS = 1000;
/** Carriage return and erase line: the bar redraws over itself and leaves nothing behind. */
const CLEAR_LINE = '\r\x1b[2K';

/**
 * Draws a progress bar with an ETA while `job` catches up on its source's backlog, from
 * its `started` event (resume point and source end) through its `read` events, and clears
 * it on `caughtUp` (or `stopped`). Call it before `run()`: listening to `caughtUp` is what
 * makes the runner ask for the source's end at the start.
 *
 * Only on a terminal: quiet when the stream is a pipe or a file, or when CI is set, so logs
 * stay clean. Returns the function that removes the bar and its listeners.
 */
export function showProgress(job: ObservableJob, options: ProgressOptions = {}): () => void {
  const { stream = process.stderr, env = process.env } = options;
  const intervalMs = timerMs('intervalMs', options.intervalMs ?? 100, true);
  if (stream.isTTY !== true || (env.CI !== undefined && env.CI !== '')) return () => undefined;
  const style = styleFor(colourWanted(stream, env));

  /**
   * The backlog being caught up on: from `first` (known at the first read) to `end`; the
   * rate is measured from `rateFrom`, where the first chunk read left it.
   */
  let backlog:
    | {
        first: bigint | undefined;
        end: bigint;
        rateFrom: { at: number; done: number } | undefined;
      }
    | undefined;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let drawn = false;

  const draw = (read: bigint): void => {
    if (backlog?.first === undefined) return;
    const now = Date.now();
    const total = Number(backlog.end - backlog.first);
    const done = Math.min(Number(read - backlog.first), total);
    const rateFrom = (backlog.rateFrom ??= { at: now, done });
    // The frame that reaches the end is always drawn: 100% stays up until `caughtUp`.
    if (now - lastDraw < intervalMs && done < total) return;
    lastDraw = now;
    const fraction = total > 0 ? done / total : 1;
    const filled = Math.round(fraction * BAR_WIDTH);
    const measuredMs = now - rateFrom.at;
    const measured = done - rateFrom.done;
    const eta =
      measuredMs >= RATE_WINDOW_MS && measured > 0
        ? humanDuration(((total - done) * measuredMs) / measured)
        : '-';
    stream.write(
      `${CLEAR_LINE}catching up [${style.green('#'.repeat(filled))}${'-'.repeat(BAR_WIDTH - filled)}] ` +
        `${Math.floor(fraction * 100)}% ${done}/${total} ETA ${eta}`,
    );
    drawn = true;
  };

  const clear = (): void => {
    if (drawn) stream.write(CLEAR_LINE);
    drawn = false;
    backlog = undefined;
  };

  // Prepended where the bar goes away: its line is cleared before any other listener of the
  // event writes (a log line on `caughtUp` would otherwise land on the bar's line).
  const beforeOthers = { prepend: true };
  const unsubscribe = [
    job.on('started', ({ from, sourceEnd }) => {
      clear();
      if (sourceEnd === undefined) return; // the end could not be read: nothing to measure
      backlog = { first: from === 'first' ? undefined : from, end: sourceEnd, rateFrom: undefined };
      lastDraw = Number.NEGATIVE_INFINITY;
    }),
    job.on('read', ({ firstOffset, messages }) => {
      if (backlog === undefined) return;
      backlog.first ??= firstOffset;
      draw(firstOffset + BigInt(messages));
    }),
    // Not reading until the next `started`, which draws a new bar.
    job.on('restart', clear, beforeOthers),
    job.on('deactivated', clear, beforeOthers),
    job.on('caughtUp', stop, beforeOthers),
    job.on('stopped', stop, beforeOthers),
  ];

  function stop(): void {
    clear();
    for (const remove of unsubscribe) remove();
  }
  return stop;
}
