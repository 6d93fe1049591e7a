import { ConfigError } from './errors.js';
import { settledWithin } from './waits.js';

/** How long `close()` waits for a run under way to end by itself, ms. */
const CLOSE_WAIT_MS = 5_000;

/**
 * One `run()` at a time, none after `close()`: the rule a database sink and an outbox relay
 * keep alike. A run's signal (`signalWith`) aborts at `close()` too.
 */
export class SingleRun {
  private readonly closing = new AbortController();
  /** The run under way, settled either way; undefined between runs. */
  private running: Promise<unknown> | undefined;

  constructor(
    /** What runs, as errors name it: 'sink', 'relay'. */
    private readonly what: string,
    /** Its name, given with the error. */
    private readonly name: string,
  ) {}

  /** A run's signal: aborts at `close()` or when any of `others` aborts. */
  signalWith(...others: readonly (AbortSignal | undefined)[]): AbortSignal {
    return AbortSignal.any([
      this.closing.signal,
      ...others.filter((other): other is AbortSignal => other !== undefined),
    ]);
  }

  /** Starts `run`, or rejects with a `ConfigError` when closed or while a run is under way. */
  start<T>(run: () => Promise<T>): Promise<T> {
    if (this.closing.signal.aborted) {
      return Promise.reject(new ConfigError(this.what, 'is closed', this.name));
    }
    if (this.running !== undefined) {
      return Promise.reject(
        new ConfigError('run', `must not be called while the ${this.what} runs`, this.name),
      );
    }
    const started = run().finally(() => (this.running = undefined));
    this.running = started.catch(() => undefined);
    return started;
  }

  /** Aborts the run under way and waits for it to end, 5 s at most. */
  async close(): Promise<void> {
    this.closing.abort();
    await settledWithin(this.running, CLOSE_WAIT_MS);
  }
}
