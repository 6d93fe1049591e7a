// A random scenario (test/support/arbitraries/scenario.ts) on the embedded broker: the source
// stream it describes, and the target an uninterrupted run of its job writes, to compare others
// with.
import { MemoryBroker } from '../../../src/memory/index.js';
import { buildJob, encodeSource, type JobSpec, type SourceSpec } from './scenario.js';

/** A broker with the scenario's 'source' stream and an empty 'target'. */
export function brokerWith(source: SourceSpec): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  for (const chunk of encodeSource(source)) {
    if (chunk.messages.length > 0)
      broker.append('source', chunk.messages, { timestamp: chunk.timestamp });
  }
  return broker;
}

/** The broker after one run of the job to the end of the source, without any fault. */
export async function uninterrupted(source: SourceSpec, spec: JobSpec): Promise<MemoryBroker> {
  const broker = brokerWith(source);
  await buildJob(spec, broker.source('source'), broker.target('target', { producer: 'job-1' })).run(
    { untilCaughtUp: true },
  );
  return broker;
}

/** The bytes of every message of the target stream, in offset order. */
export function targetBytes(broker: MemoryBroker): Uint8Array[] {
  return broker.messages('target').map((m) => m.bytes);
}
