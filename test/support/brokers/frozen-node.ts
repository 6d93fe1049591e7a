// Freezes a node of the local 3-node cluster as a hung machine would: SIGSTOP of its Erlang VM
// (beam.smp), found by the STREAM_WINDOWS_INSTANCE tag scripts/rabbitmq.sh gives every process
// of node N (`cluster-N`). Its TCP connections stay open; it answers nothing until thawed.
import { readdirSync, readFileSync } from 'node:fs';
import type { ClusterNode } from './rabbitmq-cluster.js';

/** The pid of node `n`'s beam.smp. */
function beamOf(n: ClusterNode): number {
  const tag = `STREAM_WINDOWS_INSTANCE=cluster-${n}`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim();
      if (comm !== 'beam.smp') continue;
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (environ.includes(tag)) return Number(entry);
    } catch {
      // It exited between the listing and the read, or is not ours to read.
    }
  }
  throw new Error(`no beam.smp of cluster node ${n} (tagged ${tag}) is running`);
}

/**
 * Stops node `n`'s VM with SIGSTOP; returns the function that continues it (SIGCONT), which
 * the caller must call in a `finally`: the other tests need every node running.
 */
export function freezeNode(n: ClusterNode): () => void {
  const pid = beamOf(n);
  process.kill(pid, 'SIGSTOP');
  return () => process.kill(pid, 'SIGCONT');
}
