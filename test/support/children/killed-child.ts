// The SIGKILL crash tests' child processes: a job run as a child (a TypeScript script run
// through tsx) that prints 'p' on stdout each time it hands a result to the broker (and may
// print other marks, e.g. 's' once it has recovered), killed at random moments and restarted.
import { spawn } from 'node:child_process';
import { expect } from 'vitest';

/** A child started by {@link startChild}. */
export interface StartedChild {
  /** Sends SIGKILL (nothing once it has ended). */
  kill(): void;
  /** True when it was killed with SIGKILL, false when it exited with code 0; rejects otherwise. */
  readonly ended: Promise<boolean>;
  /** Resolves once every character it printed was handed to `onMark` (may come after `ended`). */
  readonly read: Promise<void>;
}

/**
 * Starts `script` with `args`: a .ts file through tsx, a bundle (`bundleChild`, plain
 * JavaScript) as it is; `onMark` sees every character it prints on stdout.
 */
export function startChild(
  script: string,
  args: readonly string[],
  onMark: (mark: string) => void = () => undefined,
): StartedChild {
  const loader = script.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const proc = spawn(process.execPath, [...loader, script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ended = new Promise<boolean>((resolve, reject) => {
    proc.on('error', reject);
    proc.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(true);
      else if (code === 0) resolve(false);
      else reject(new Error(`aggregator exited with code ${code}`));
    });
  });
  proc.stdout.on('data', (data: Buffer) => {
    for (const mark of data.toString()) onMark(mark);
  });
  const read = new Promise<void>((resolve) => proc.stdout.on('close', resolve));
  return {
    kill: () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    },
    ended,
    read,
  };
}

/**
 * Runs `script` with `args` to completion, or kills it with SIGKILL once it has reported
 * `killAfter` publishes (0: at its first mark of any kind), `killDelayMs` later (default at
 * once); resolves true when it was killed, false when it exited with code 0, and rejects on
 * any other end. `onMark` sees every mark.
 */
export async function runChild(
  script: string,
  args: readonly string[],
  killAfter = Infinity,
  killDelayMs = 0,
  onMark: (mark: string) => void = () => undefined,
): Promise<boolean> {
  let published = 0;
  let kill: NodeJS.Timeout | undefined;
  const child = startChild(script, args, (mark) => {
    onMark(mark);
    if (mark === 'p') published++;
    if (published < killAfter) return;
    if (killDelayMs === 0) child.kill();
    else kill ??= setTimeout(() => child.kill(), killDelayMs);
  });
  try {
    return await child.ended;
  } finally {
    clearTimeout(kill);
  }
}

/** How often, and when, {@link killWhilePublishing} kills the child. */
export interface KillPlan {
  readonly kills: number;
  /** How many results the target holds once the job has caught up (an uninterrupted run's). */
  readonly results: number;
  /** Share of the kills that come as soon as the child has recovered (default 0). */
  readonly atStart?: number;
  /** Uniform in [0, 1): a seeded one makes the kills repeatable. */
  readonly random: () => number;
}

/**
 * Runs the child (through `run`, e.g. a {@link runChild}) `plan.kills` times, each killed
 * after a random number of results, at most an even share of what is left, so that every kill
 * lands before the job catches up, then once to completion. Results handed over just before
 * a kill may or may not be stored. Returns how many results `targetSize` found after each kill.
 */
export async function killWhilePublishing(
  run: (killAfter?: number) => Promise<boolean>,
  targetSize: () => Promise<number>,
  { kills, results, atStart = 0, random }: KillPlan,
): Promise<number[]> {
  const sizes: number[] = [];
  for (let killed = 0; killed < kills; killed++) {
    const left = results - (await targetSize());
    const share = Math.max(1, Math.floor(left / (kills - killed + 1)));
    const killAfter = random() < atStart ? 0 : 1 + Math.floor(random() * share);
    expect(await run(killAfter)).toBe(true);
    sizes.push(await targetSize());
  }
  expect(await run()).toBe(false);
  return sizes;
}
