// A part of the orders example's chain kept running while the orders come in: one instance
// after another, the first few killed at a random moment, each restarted as a fresh instance,
// until the example stops it. How an instance runs and dies (a fault in this process, or a
// child process and SIGKILL) is the caller's.
import type { Role } from './orders-chain.js';

/** How many times each part is killed while the orders come in. */
export const KILLS = 3;

/**
 * Runs one instance: killed at a random moment when `kill`, else until `stop` aborts. Resolves
 * with how it was killed (as printed), or undefined when it was stopped; rejects when it failed
 * any other way.
 */
export type LaneInstance = (kill: boolean, stop: AbortSignal) => Promise<string | undefined>;

export interface ChainLane {
  readonly role: Role;
  /** How each kill so far came, as printed. */
  readonly kills: readonly string[];
  /** Resolves once the part was killed {@link KILLS} times; rejects when it failed otherwise. */
  readonly killed: Promise<void>;
  /** Stops the running instance; resolves once it has ended. */
  stop(): Promise<void>;
}

export function chainLane(role: Role, instance: LaneInstance): ChainLane {
  const stop = new AbortController();
  const kills: string[] = [];
  let planned: () => void = () => undefined;
  const killed = new Promise<void>((resolve) => (planned = resolve));
  const loop = (async () => {
    while (!stop.signal.aborted) {
      const kill = await instance(kills.length < KILLS, stop.signal);
      if (kill === undefined) continue;
      kills.push(kill);
      if (kills.length === KILLS) planned();
    }
  })();
  // Whoever awaits `killed` learns of a failure; stop() does not throw it again.
  const ended = loop.catch(() => undefined);
  return {
    role,
    kills,
    killed: Promise.race([killed, loop.then(() => killed)]),
    stop: async () => {
      stop.abort();
      await ended;
    },
  };
}
