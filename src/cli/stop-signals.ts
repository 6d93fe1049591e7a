import { ExitCode } from './command.js';

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** A command's way to hear that it was asked to stop; `dispose` removes the listeners. */
export interface StopSignals {
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * SIGINT and SIGTERM as the normal end of a command that runs until stopped: the first aborts
 * `signal` (the command ends its work and exits 0), a second ends the process at once, with
 * exit 0 as well: it asked for the same stop, sooner. Two often come together: a Ctrl-C reaches
 * the whole foreground process group, and a parent that forwards signals (npm exec, a process
 * supervisor) sends its own copy. Left to Node's default, the second one would kill the
 * command with exit 130.
 */
export function stopSignals(): StopSignals {
  const stop = new AbortController();
  const onSignal = (): void => {
    if (stop.signal.aborted) process.exit(ExitCode.ok);
    stop.abort();
  };
  for (const name of STOP_SIGNALS) process.on(name, onSignal);
  return {
    signal: stop.signal,
    dispose: () => {
      for (const name of STOP_SIGNALS) process.off(name, onSignal);
    },
  };
}
