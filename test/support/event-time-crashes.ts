// A job's target bytes uninterrupted, and after a crash right after the k-th
// confirmed publish (then a clean restart), for every k.
import { MemoryBroker, SimulatedCrash } from '../../src/memory/index.js';
import type { RunOptions } from '../../src/index.js';

export interface Job {
  run(options: RunOptions): Promise<unknown>;
}

export type MakeJob = (broker: MemoryBroker) => Job;

/** A broker with stream 'source' holding `chunks` (one append each) and an empty 'target'. */
export function brokerWith(chunks: readonly Uint8Array[][], source = 'source'): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream(source);
  broker.createStream('target');
  for (const chunk of chunks) broker.append(source, chunk);
  return broker;
}

export const targetBytes = (broker: MemoryBroker): string[] =>
  broker.messages('target').map((m) => Buffer.from(m.bytes).toString('hex'));

/** For each k in 1..published: bytes after crashing once after the k-th confirm, then a restart. */
export async function crashRuns(
  chunks: readonly Uint8Array[][],
  makeJob: MakeJob,
): Promise<{ clean: string[]; crashed: { k: number; bytes: string[] }[] }> {
  const clean = brokerWith(chunks);
  await makeJob(clean).run({ untilCaughtUp: true });
  const cleanBytes = targetBytes(clean);
  const crashed: { k: number; bytes: string[] }[] = [];
  for (let k = 1; k <= cleanBytes.length; k++) {
    const broker = brokerWith(chunks);
    broker.injectFault({ stream: 'target', atPublish: k, point: 'after-confirm' });
    try {
      await makeJob(broker).run({ untilCaughtUp: true });
    } catch (error) {
      if (!(error instanceof SimulatedCrash)) throw error;
    }
    broker.clearFaults();
    await makeJob(broker).run({ untilCaughtUp: true });
    crashed.push({ k, bytes: targetBytes(broker) });
  }
  return { clean: cleanBytes, crashed };
}
