import { ConfigError } from './errors.js';
import { silentLogger, type Logger } from './logger.js';

/**
 * Retriable errors in a row, with no progress between them, before the first warning. At the
 * default backoff (100 ms, doubled) the fifth retry comes about 3 s after the first failure: a
 * connection blip or a leader election is retried once or twice and says nothing, a broker or
 * database that stays away is told within seconds.
 */
export const DEFAULT_WARN_AFTER_RETRIES = 5;

/** Checks `warnAfterRetries` (absent: the default): an integer >= 1, or Infinity (never warn). */
export function checkWarnAfterRetries(value: unknown): number {
  if (value === undefined) return DEFAULT_WARN_AFTER_RETRIES;
  if (value === Infinity || (Number.isSafeInteger(value) && (value as number) >= 1)) {
    return value as number;
  }
  throw new ConfigError(
    'warnAfterRetries',
    'must be an integer >= 1, or Infinity to never warn of retries',
    value,
  );
}

/** What a `RetryWarning` speaks of, and where. */
export interface RetryWarningConfig {
  /** The loop's logger: the lines go to it, or to stderr when it is the default silent one. */
  readonly logger: Logger;
  /** Retries in a row before the first warning (`checkWarnAfterRetries`). */
  readonly warnAfter: number;
  /** What retries, as the line names it: `job 'p' (source 'a', target 'b')`. */
  readonly subject: string;
  /** The fields of the logger's line (no credential: names of streams and producers). */
  readonly fields: object;
  /** The clock of the line's "for N s", ms. */
  readonly now?: () => number;
}

/**
 * The warning of a loop that retries and gets nowhere: one home for a job's loop (a
 * partition's too) and a database sink's. Each retry is an event and a log line, but the
 * default logger is silent, so a job retrying for ever would say nothing. After `warnAfter`
 * retries in a row with no progress between them, ONE line names the loop, the count, how long,
 * and the last cause; again at twice as many retries, then four times (not at every retry);
 * and once the loop progresses, a line that it recovered. Through the loop's logger (at warn,
 * both, so that whoever sees the warning sees its end), or on stderr when it is the default
 * silent one. Counting any cause, not one at a time: alternating causes are no progress either.
 */
export class RetryWarning {
  private inARow = 0;
  private nextWarningAt: number;
  private since = 0;
  private readonly now: () => number;

  constructor(private readonly config: RetryWarningConfig) {
    this.nextWarningAt = config.warnAfter;
    this.now = config.now ?? Date.now;
  }

  /** A retriable `error` is retried in `delayMs`. */
  retrying(error: unknown, delayMs: number): void {
    this.inARow++;
    if (this.inARow === 1) this.since = this.now();
    if (this.inARow < this.nextWarningAt) return;
    this.nextWarningAt *= 2;
    const { subject } = this.config;
    this.say(
      { retries: this.inARow, delayMs, err: error },
      `${subject} has retried ${this.inARow} times in a row without progress for ` +
        `${this.seconds()} s, the last after ${causeOf(error)}; retrying in ${delayMs} ms`,
    );
  }

  /** The loop progressed (a result confirmed, a batch committed, caught up): the retries end. */
  progressed(): void {
    if (this.inARow === 0) return;
    const retries = this.inARow;
    const warned = retries >= this.config.warnAfter;
    this.inARow = 0;
    this.nextWarningAt = this.config.warnAfter;
    if (warned) {
      this.say(
        { retries },
        `${this.config.subject} recovered after ${retries} retries in a row (${this.seconds()} s)`,
      );
    }
  }

  private seconds(): string {
    return ((this.now() - this.since) / 1000).toFixed(1);
  }

  private say(fields: object, message: string): void {
    const { logger } = this.config;
    if (logger !== silentLogger) {
      logger.warn({ ...this.config.fields, ...fields }, message);
      return;
    }
    process.stderr.write(
      `stream-windows: ${message} (warnAfterRetries: Infinity, or a logger, silences this)\n`,
    );
  }
}

/** The cause on one line: its class, its code and its message (which names stream and offset). */
function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error).split('\n')[0] ?? '';
  const { code } = error as { code?: unknown };
  const shown = typeof code === 'string' ? ` ${code}` : '';
  return `${error.name}${shown}: ${error.message.split('\n')[0] ?? ''}`;
}
