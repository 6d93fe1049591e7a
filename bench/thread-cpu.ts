/**
 * Where the CPU of the `scaling` case's embedded-broker runs goes, thread by thread (Linux):
 *   npx tsx bench/thread-cpu.ts [messages] [rounds]
 * Runs `PartitionWorkers` with 1 and 2 threads over the same 2-partition job (bench/scaling-worker.ts),
 * alternating, and prints µs of CPU per message from the first loop's start to the end, split
 * into the main thread, the worker threads (the threads that appeared with the run) and the
 * process's other threads (V8's platform workers: concurrent GC and compilation; libuv's pool),
 * read from /proc/self/task/<tid>/stat every 20 ms (a worker thread's last 20 ms before it
 * exits may be missed; the total from process.cpuUsage is printed beside).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { PartitionWorkers } from '../src/partitioning/partition-workers.js';
import { cpuClock } from './measure.js';
import type { ScalingWorkerConfig } from './scaling-worker.js';

const WORKER = new URL('./scaling-worker.ts', import.meta.url);
const REGISTER_TSX = new URL('../test/support/children/register-tsx.mjs', import.meta.url);
const TICK_MS = 10; // USER_HZ 100

/** CPU ms of each thread of this process, by thread id. */
function threadCpu(): Map<string, number> {
  const cpu = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(tid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // the thread exited between the listing and the read
    }
  }
  return cpu;
}

const messages = Number(process.argv[2] ?? 1_000_000);
const rounds = Number(process.argv[3] ?? 3);
const config: ScalingWorkerConfig = { partitions: 2, messagesPerPartition: messages >> 1 };
const us = (ms: number): string => ((ms * 1000) / messages).toFixed(2);

for (let run = 0; run < 2 * rounds; run++) {
  const workers = (run % 2) + 1;
  const before = new Set(threadCpu().keys());
  const threads = new PartitionWorkers(WORKER, { workers, config, imports: [REGISTER_TSX] });
  let atStart: { threads: Map<string, number>; total: number } | undefined;
  threads.on('started', () => {
    atStart ??= { threads: threadCpu(), total: cpuClock() };
  });
  const last = new Map<string, number>();
  const sample = (): void => {
    for (const [tid, ms] of threadCpu()) last.set(tid, ms);
  };
  const timer = setInterval(sample, 20);
  await threads.run({ untilCaughtUp: true });
  sample();
  const total = cpuClock() - (atStart?.total ?? Number.NaN);
  clearInterval(timer);
  await threads.close();
  const split = { main: 0, workers: 0, others: 0 };
  for (const [tid, ms] of last) {
    const used = ms - (atStart?.threads.get(tid) ?? 0);
    if (tid === String(process.pid)) split.main += used;
    else if (before.has(tid)) split.others += used;
    else split.workers += used;
  }
  console.log(
    `${workers} thread(s): µs per message: main ${us(split.main)}, worker threads ${us(split.workers)}, ` +
      `other threads ${us(split.others)}; process.cpuUsage ${us(total)}`,
  );
}
