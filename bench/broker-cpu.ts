import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Clock ticks per second of /proc/PID/stat's utime and stime (USER_HZ: 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** The CPU the local RabbitMQ broker's processes used, or why it cannot be measured. */
export type BrokerCpu =
  | { readonly measured: true; readonly pids: readonly number[]; readonly cpuMs: () => number }
  | { readonly measured: false; readonly reason: string };

/**
 * The broker of `url` when it is the one scripts/rabbitmq.sh runs on this machine: the
 * processes whose root is its chroot and whose STREAM_WINDOWS_INSTANCE is `single` (an untagged
 * process counts as the single broker's, as in scripts/lib/debian-root.sh `tagged_pids`).
 * `cpuMs()` sums their user and system time (every thread of each) from /proc/PID/stat; take
 * it before and after a round. A remote broker, another port or no such processes: not
 * measured, with the reason, rather than a guess.
 */
export function brokerCpu(
  url: string,
  cache = process.env.STREAM_WINDOWS_CACHE ?? join(homedir(), '.cache', 'stream-windows'),
): BrokerCpu {
  const { hostname, port } = new URL(url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(hostname)) {
    return { measured: false, reason: `the broker at ${hostname} is not on this machine` };
  }
  const root = join(cache, 'rabbitmq-trixie');
  const runningPort = readText(join(cache, 'rabbitmq.port'))?.trim();
  if (runningPort !== (port || '5552')) {
    return {
      measured: false,
      reason: `port ${port} is not the one of scripts/rabbitmq.sh's broker (${runningPort ?? 'none running'})`,
    };
  }
  const pids = taggedPids(root, 'single');
  if (pids.length === 0) return { measured: false, reason: `no broker process runs in ${root}` };
  const lastTicks = new Map<number, number>();
  return { measured: true, pids, cpuMs: () => cpuMsOf(pids, lastTicks) };
}

/** How the bench prints a broker's CPU figure it could not measure. */
export function notMeasured(broker: BrokerCpu): string | undefined {
  return broker.measured ? undefined : `broker CPU: not measured (${broker.reason})`;
}

/** The processes rooted at `root` whose instance tag is `tag`. */
function taggedPids(root: string, tag: string): number[] {
  const rootId = identity(root);
  if (rootId === undefined) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // A process may exit between the listing and the reads: it is simply not counted.
    if (identity(`/proc/${entry}/root`) !== rootId) continue;
    const environ = readText(`/proc/${entry}/environ`);
    if (environ === undefined) continue;
    const tagged = environ
      .split('\0')
      .filter((variable) => variable.startsWith('STREAM_WINDOWS_INSTANCE='))
      .at(-1);
    if ((tagged?.slice('STREAM_WINDOWS_INSTANCE='.length) ?? 'single') === tag) {
      pids.push(Number(entry));
    }
  }
  return pids;
}

/**
 * utime + stime of the processes, in ms (Linux `/proc`). One that exited (or whose pid was taken by a newer
 * process) counts at its last reading in `lastTicks`, so the sum never falls between the two
 * readings of a round.
 */
export function cpuMsOf(pids: Iterable<number>, lastTicks: Map<number, number>): number {
  let ticks = 0;
  for (const pid of pids) {
    const stat = readText(`/proc/${pid}/stat`);
    let now = lastTicks.get(pid) ?? 0;
    if (stat !== undefined) {
      // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      now = Math.max(now, Number(fields[11]) + Number(fields[12])); // fields 14, 15: utime, stime
    }
    lastTicks.set(pid, now);
    ticks += now;
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

function identity(path: string): string | undefined {
  try {
    const { dev, ino } = statSync(path);
    return `${dev}:${ino}`;
  } catch {
    return undefined;
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
