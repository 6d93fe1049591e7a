// The embedded broker must agree with RabbitMQ on partitioned jobs: the same super stream layout
// (names and partitions) holding the same messages per partition, the same job run with
// `.toPartitions()` on both, gives each partition's producer byte-identical results on the
// target stream, for every window kind and every packing.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeResult } from '../../src/index.js';
import { partitionProducer } from '../../src/partitioning/partitioned-runner.js';
import { MemoryBroker } from '../../src/memory/index.js';
import {
  buildPartitionedJob,
  encodeSource,
  jobArb,
  packingName,
  packings,
  sourceArb,
  type JobSpec,
  type SourceSpec,
  EVERY_WINDOW_KIND,
} from '../support/arbitraries/scenario.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();
const PARTITIONS = 3;
const JOB = 'diff-job';

/** Results per producer name, in stream order (loops publish concurrently: only that order holds). */
function byProducer(messages: readonly Uint8Array[]): Map<string, Buffer[]> {
  const results = new Map<string, Buffer[]>();
  for (const bytes of messages) {
    const { producer } = decodeResult(bytes);
    results.set(producer, [...(results.get(producer) ?? []), Buffer.from(bytes)]);
  }
  return results;
}

async function onMemory(
  sources: readonly SourceSpec[],
  spec: JobSpec,
  superStream: string,
  to: string,
): Promise<Map<string, Buffer[]>> {
  const broker = new MemoryBroker();
  const partitions = broker.createSuperStream(superStream, { partitions: PARTITIONS });
  broker.createStream(to);
  partitions.forEach((partition, p) => {
    for (const chunk of encodeSource(sources[p] as SourceSpec)) {
      if (chunk.messages.length > 0) {
        broker.append(partition, chunk.messages, { timestamp: chunk.timestamp });
      }
    }
  });
  const job = buildPartitionedJob(
    spec,
    broker.superStreamSource(superStream),
    (partition) => broker.target(to, { producer: partition.producer }),
    JOB,
  );
  await job.run({ untilCaughtUp: true });
  return byProducer(broker.messages(to).map((message) => message.bytes));
}

async function onRabbit(
  sources: readonly SourceSpec[],
  spec: JobSpec,
  superStream: string,
  to: string,
): Promise<Map<string, Buffer[]>> {
  const partitions = await real.rabbit.createSuperStream(superStream, { partitions: PARTITIONS });
  await real.rabbit.createStream(to);
  try {
    for (const [p, partition] of partitions.entries()) {
      const messages = encodeSource(sources[p] as SourceSpec).flatMap((chunk) => chunk.messages);
      await publishAll(real.rabbit, partition, messages);
    }
    const targets = partitions.map((partition) =>
      real.rabbit.target(to, { producer: partitionProducer(JOB, partition) }),
    );
    const job = buildPartitionedJob(
      spec,
      real.rabbit.superStreamSource(superStream),
      (partition) => targets[partition.index] as (typeof targets)[number],
      JOB,
    );
    await job.run({ untilCaughtUp: true });
    for (const target of targets) await target.close();
    return byProducer(await readAll(real.rabbit, to));
  } finally {
    await real.rabbit.deleteSuperStream(superStream);
    await real.rabbit.deleteStream(to);
  }
}

const windows = EVERY_WINDOW_KIND;

describe('a partitioned job on the embedded broker and on RabbitMQ', () => {
  // One packing per window kind, in turn, so that every packing and every kind is covered.
  const scenarios = windows.map((window, w) => {
    const seed = 2000 + w;
    const sources = fc.sample(sourceArb({ garbage: true, minLength: 30 }), {
      seed,
      numRuns: PARTITIONS,
    });
    const [job] = fc.sample(jobArb({ deadLetter: true }), { seed, numRuns: 1 });
    const packing = packings[w % packings.length] as (typeof packings)[number];
    const spec: JobSpec = {
      ...(job as JobSpec),
      window,
      pack: packing.pack,
      format: packing.format,
    };
    return { sources, spec };
  });

  it.each(
    scenarios.map((s) => [`${s.spec.window.kind} packed as ${packingName(s.spec)}`, s] as const),
  )(
    'should write byte-identical results for every partition for %s',
    async (_name, { sources, spec }) => {
      // The same names on both: they are in the results (source and producer).
      const [superStream, to] = [uniqueStream('pdiff-source'), uniqueStream('pdiff-target')];

      const memory = await onMemory(sources, spec, superStream, to);
      const rabbit = await onRabbit(sources, spec, superStream, to);

      const producers = Array.from({ length: PARTITIONS }, (_, p) =>
        partitionProducer(JOB, `${superStream}-${p}`),
      );
      expect([...memory.keys()].sort()).toEqual(producers);
      for (const producer of producers) {
        expect(memory.get(producer)?.length ?? 0).toBeGreaterThan(1);
        expect(rabbit.get(producer)).toEqual(memory.get(producer));
      }
      expect([...rabbit.keys()].sort()).toEqual(producers);
    },
  );
});
