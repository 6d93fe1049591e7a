// A part of the orders example's chain as child processes on the real servers: each child runs
// one instance (./chain-child.ts), and a kill is a SIGKILL at a random moment after it started
// running: whatever it was doing (a read, a publish in flight, a transaction open) stops
// there, its connections die with it, and a fresh child starts.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chainLane, type ChainLane } from './chain-lane.js';
import type { ChainPlace, Role } from './orders-chain.js';

const CHILD = fileURLToPath(new URL('./chain-child.ts', import.meta.url));
/** A kill comes this long after the child said it runs, at the least and at the most, ms. */
const KILL_AFTER_MS = [200, 2_000] as const;

export function killedLane(
  role: Role,
  place: ChainPlace,
  env: Readonly<Record<string, string>>,
  random: () => number,
): ChainLane {
  return chainLane(role, async (kill, stop) => {
    const [least, most] = KILL_AFTER_MS;
    const afterMs = Math.round(least + random() * (most - least));
    // stdin stays open: the child ends when this process does, whatever ends it.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, role, place.schema, place.ordersStream, place.revenueStream],
      { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const sigkill = () => child.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (kill && text.includes('running')) timer ??= setTimeout(sigkill, afterMs);
    });
    stop.addEventListener('abort', sigkill);
    try {
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>(
        (resolve, reject) => {
          child.on('error', reject);
          child.on('exit', (...end) => resolve(end));
        },
      );
      if (signal !== 'SIGKILL') {
        throw new Error(`the ${role}'s process ended by itself (code ${code}, signal ${signal})`);
      }
      return stop.aborted ? undefined : `${afterMs} ms into its run`;
    } finally {
      clearTimeout(timer);
      stop.removeEventListener('abort', sigkill);
    }
  });
}
