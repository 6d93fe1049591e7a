import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

/** This tree's instance of the partitioned bench job (./partition-child.ts). */
export const PARTITION_CHILD = fileURLToPath(new URL('./partition-child.ts', import.meta.url));

/** One instance of the partitioned bench job in its own process, driven by its stdio. */
export interface Child {
  readonly ready: Promise<void>;
  readonly done: Promise<void>;
  readonly exited: Promise<void>;
  go(): void;
  /** Resolves on the next result this child confirms. */
  nextConfirm(): Promise<void>;
  /** Hears every line the child writes (the probe's among them). */
  onLine(listener: (line: string) => void): void;
  /** SIGKILL, or SIGSTOP: frozen, its connections left open (a host gone silent). */
  kill(signal?: 'SIGKILL' | 'SIGSTOP'): void;
  stop(): void;
}

/**
 * Starts `script` (./partition-child.ts, or the same file in another tree for a before/after
 * run) on `superStream`, publishing to `target`, with `flags`.
 */
export function startChild(
  url: string,
  superStream: string,
  target: string,
  flags: string[],
  script = PARTITION_CHILD,
): Child {
  const proc: ChildProcessByStdio<Writable, Readable, null> = spawn(
    process.execPath,
    ['--import', 'tsx', script, url, superStream, target, ...flags],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let ready: () => void = () => undefined;
  let done: () => void = () => undefined;
  let failed: (error: Error) => void = () => undefined;
  let ending = false; // killed or stopped on purpose
  const exited = new Promise<void>((resolve) =>
    proc.on('exit', (code, signal) => {
      if (!ending)
        failed(new Error(`bench child ${script} ended (${code ?? signal}) before it was done`));
      resolve();
    }),
  );
  const confirmWaits: (() => void)[] = [];
  const listeners: ((line: string) => void)[] = [];
  createInterface({ input: proc.stdout }).on('line', (line) => {
    if (line === 'ready') ready();
    if (line === 'done') done();
    if (line === 'confirmed') for (const wake of confirmWaits.splice(0)) wake();
    for (const listener of listeners) listener(line);
  });
  return {
    ready: new Promise((resolve) => (ready = resolve)),
    done: new Promise((resolve, reject) => {
      done = resolve;
      failed = reject;
    }),
    exited,
    go: () => proc.stdin.write('go\n'),
    nextConfirm: () => new Promise((resolve) => confirmWaits.push(resolve)),
    onLine: (listener) => listeners.push(listener),
    kill: (signal = 'SIGKILL') => {
      ending = true;
      proc.kill(signal);
    },
    stop: () => {
      ending = true;
      proc.kill('SIGTERM');
    },
  };
}
