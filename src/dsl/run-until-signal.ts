import { constants } from 'node:os';
import { ConfigError } from '../common/errors.js';
import { checkLogger, type Logger } from '../common/logger.js';
import { timerMs } from '../common/timer-duration.js';
import type { RunOptions, RunSummary } from '../api/run-options.js';

/**
 * What `runUntilSignal` needs of a job: a `Runner` (what `.to()` returns) is one, a database
 * sink (`databaseSink`) another; `S` is what its run resolves to.
 */
export interface StoppableJob<S = RunSummary> {
  /** Runs the job until `options.signal` aborts (or it stops itself); resolves with a summary. */
  run(options: RunOptions): Promise<S>;
  /** Results awaiting their confirm (a sink's transactions under way): logged when the grace runs out. */
  readonly inFlight: number;
}

/** The options of `runUntilSignal`: what to close, the grace, a logger, and the run options. */
export interface RunUntilSignalOptions extends Omit<RunOptions, 'signal'> {
  /**
   * Closes what the job's source and target use (e.g. `() => rabbit.close()`); required,
   * so that nothing keeps the process alive once the job has stopped. Called once, after
   * the job has stopped or the grace has run out, also when the job failed.
   */
  readonly close: () => unknown;
  /**
   * How long, after the first signal, the results already published may take to be
   * confirmed before `close()` is called anyway, ms (default 10,000; 0 closes at once). Keep
   * it, plus the time `close()` takes, below the time the process is given to stop (in
   * Kubernetes `terminationGracePeriodSeconds`, 30 s by default).
   */
  readonly graceMs?: number;
  /** Where the stop is told (signal received, grace run out, close failed); default silent. */
  readonly logger?: Logger;
}

/** The signals that stop a job: Kubernetes, systemd and docker send SIGTERM; Ctrl-C is SIGINT. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT'] as const;
type StopSignal = (typeof STOP_SIGNALS)[number];

const DEFAULT_GRACE_MS = 10_000;

type Outcome<S> = { readonly summary: S } | { readonly error: unknown };

/**
 * Runs `job` until it stops by itself or the process gets SIGTERM or SIGINT, then ends the
 * process the conventional way. On the first signal the job stops reading (its run's signal
 * aborts: the open step is dropped), the results already published get up to `graceMs` to be
 * confirmed, `close()` is called, and the signal is raised again with this function's
 * listeners removed, so the process ends by that signal (exit status 128 + N to a shell: 143
 * for SIGTERM, 130 for SIGINT) and the promise never settles. A second signal meanwhile (a
 * `close()` that hangs, an impatient Ctrl-C) ends the process by it at once.
 *
 * Safe by construction: what is lost by stopping is only what a crash would lose, and a
 * restart recovers it from the broker. The dropped open step is read again from the
 * broker's last publishing id + 1; a result whose confirm had not come when the grace ran
 * out is either stored, and the restart resumes past it, or not, and the restart publishes
 * it again — under the same publishing id, so the broker discards a second copy.
 *
 * When the job stops by itself (`untilCaughtUp`, or an error), `close()` is called and the
 * promise settles as `run()` would: the run's summary, or its error (else the error of
 * `close()`). The listeners are then removed and nothing of this function keeps the process
 * alive or ends it. A signal that comes while `close()` runs still ends the process by it.
 *
 * The signal is re-raised only when nobody else listens to it (else the other listeners,
 * which already saw it once, would see it twice); with other listeners the process exits
 * with code 128 + N instead. Options are checked before anything runs (`ConfigError`).
 */
export async function runUntilSignal<S = RunSummary>(
  job: StoppableJob<S>,
  options: RunUntilSignalOptions,
): Promise<S> {
  if (typeof (job as Partial<StoppableJob> | null)?.run !== 'function') {
    throw new ConfigError('job', 'must have a run(options) method (a Runner)', job);
  }
  const { close, untilCaughtUp } = options;
  if (typeof close !== 'function') {
    throw new ConfigError('close', 'must be a function that closes the connections', close);
  }
  const graceMs = timerMs('graceMs', options.graceMs ?? DEFAULT_GRACE_MS, true);
  const logger = checkLogger('logger', options.logger);

  const stopping = new AbortController();
  let received: StopSignal | undefined;
  let firstSignal: () => void = () => undefined;
  const signalled = new Promise<void>((resolve) => (firstSignal = resolve));
  const removeListeners = (): void => {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
  };
  function onSignal(signal: StopSignal): void {
    if (received !== undefined) {
      logger.warn({ signal }, `${signal} while stopping on ${received}: exiting at once`);
      removeListeners();
      endBy(signal);
      return;
    }
    received = signal;
    logger.info({ signal, graceMs }, `stopping on ${signal}`);
    stopping.abort();
    firstSignal();
  }
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  // Called in a then: a run that throws instead of rejecting is an outcome like any other.
  const outcome: Promise<Outcome<S>> = Promise.resolve()
    .then(() => job.run({ untilCaughtUp, signal: stopping.signal }))
    .then(
      (summary) => ({ summary }),
      (error: unknown) => ({ error }),
    );
  const ended = await Promise.race([
    outcome,
    signalled.then(() => withinGrace(outcome, graceMs, job, logger)),
  ]);
  if (ended !== undefined && 'error' in ended && received !== undefined) {
    logger.error({ err: ended.error }, 'the job failed while stopping');
  }
  let closeFailure: { error: unknown } | undefined;
  try {
    await close();
  } catch (error) {
    closeFailure = { error };
    logger.error({ err: error }, 'close() failed');
  }
  removeListeners();
  if (received !== undefined) {
    logger.info({ signal: received }, `stopped on ${received}`);
    endBy(received);
    // Ending by a signal is not synchronous everywhere: let nothing after this run meanwhile.
    return new Promise<never>(() => undefined);
  }
  // Without a signal the race ends with the run's outcome.
  const result = ended as Outcome<S>;
  if ('error' in result) throw result.error;
  if (closeFailure !== undefined) throw closeFailure.error;
  return result.summary;
}

/** The run's outcome if it stops within `graceMs`, else undefined (logged). */
async function withinGrace<S>(
  outcome: Promise<Outcome<S>>,
  graceMs: number,
  job: StoppableJob<S>,
  logger: Logger,
): Promise<Outcome<S> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), graceMs);
  });
  try {
    const ended = await Promise.race([outcome, expired]);
    if (ended === undefined) {
      logger.warn(
        { graceMs, inFlight: job.inFlight },
        `the grace of ${graceMs} ms ran out with results unconfirmed: ` +
          'the next start publishes them again and the broker discards those it has',
      );
    }
    return ended;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Ends the process by `signal`, our listeners being removed: raised again when nobody else
 * listens, so that the process dies of it (a parent sees the signal, a shell 128 + N);
 * otherwise the other listeners would take it for a new signal, so exit with 128 + N.
 */
function endBy(signal: StopSignal): void {
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  else process.exit(128 + constants.signals[signal]);
}
