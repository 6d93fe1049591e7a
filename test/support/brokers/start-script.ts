// Runs a provisioning script (scripts/rabbitmq.sh, scripts/postgres.sh) for the global setup.
import { execFile } from 'node:child_process';
import { basename } from 'node:path';
import { promisify } from 'node:util';

export interface StartScript {
  readonly script: string;
  readonly args: readonly string[];
  /** What the tests need, for the error: "a RabbitMQ stream broker". */
  readonly what: string;
  /** The variable that would have named an existing server instead. */
  readonly variable: string;
  readonly timeoutMs: number;
}

/** How a run of the script ended when it did not succeed. */
interface ScriptFailure {
  /** True when `execFile` killed it: its `timeoutMs` ran out. */
  readonly killed?: boolean;
  readonly code?: number | string;
  readonly signal?: string | null;
  readonly stderr?: string;
  readonly message: string;
}

/**
 * The script's standard output. A run ended by a signal (killed itself, or a step of it
 * killed: bash then exits with 128 + the signal's number) is run once more, saying so on
 * standard error: the scripts are idempotent (a second start finds what the first one
 * started, or cleans up after it), and a signal comes from outside, not from a fault of the
 * server. A run that outlived `timeoutMs` (killed by `execFile` itself) is not run again:
 * its steps may still be running. Any other failure, or a second one, throws with the
 * script's own words.
 */
export async function runStartScript(start: StartScript): Promise<string> {
  try {
    return await runOnce(start);
  } catch (error) {
    const failure = error as ScriptFailure;
    if (!endedBySignal(failure)) throw startError(start, failure);
    process.stderr.write(
      `global setup: ${describe(start)} was ended by a signal (${exitOf(failure, start.timeoutMs)}; ` +
        `${failure.stderr?.trim() || 'no output'}); running it once more\n`,
    );
  }
  try {
    return await runOnce(start);
  } catch (error) {
    throw startError(start, error as ScriptFailure);
  }
}

async function runOnce(start: StartScript): Promise<string> {
  const { stdout } = await promisify(execFile)(start.script, [...start.args], {
    timeout: start.timeoutMs,
  });
  return stdout;
}

function endedBySignal(failure: ScriptFailure): boolean {
  if (failure.killed === true) return false;
  return (
    (typeof failure.signal === 'string' && failure.signal !== '') ||
    (typeof failure.code === 'number' && failure.code > 128)
  );
}

function exitOf(failure: ScriptFailure, timeoutMs: number): string {
  if (failure.killed === true) return `timed out after ${String(timeoutMs)} ms`;
  return failure.signal ? `signal ${failure.signal}` : `exit code ${String(failure.code)}`;
}

function describe(start: StartScript): string {
  return `'scripts/${basename(start.script)} ${start.args.join(' ')}'`;
}

function startError(start: StartScript, failure: ScriptFailure): Error {
  const said = failure.stderr?.trim() || failure.message;
  return new Error(
    `integration tests need ${start.what}: ${start.variable} is not set and ` +
      `${describe(start)} failed (${exitOf(failure, start.timeoutMs)}): ${said}`,
    { cause: failure },
  );
}
