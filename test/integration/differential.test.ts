// The embedded broker must agree with RabbitMQ: the same scenario run against both gives
// byte-identical target streams, for every window kind, with and without keys, in both
// packing modes, with late messages and dead letters.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import {
  buildJob,
  encodeSource,
  jobArb,
  packingName,
  packings,
  sourceArb,
  type JobSpec,
  type SourceSpec,
  EVERY_WINDOW_KIND,
} from '../support/arbitraries/scenario.js';
import { rabbitForTests, targetAfterJob, uniqueStream } from '../support/brokers/rabbitmq.js';
import { expectEveryMessageCountedOnce, stepsOf } from '../support/results/target-stream.js';

const real = rabbitForTests();

/** Runs a scenario on both brokers, with the same stream names (they are in the results). */
async function onBoth(source: SourceSpec, spec: JobSpec) {
  const [from, to] = [uniqueStream('diff-source'), uniqueStream('diff-target')];
  return {
    memory: await onMemory(source, spec, from, to),
    rabbit: await onRabbit(source, spec, from, to),
  };
}

async function onMemory(
  source: SourceSpec,
  spec: JobSpec,
  from: string,
  to: string,
): Promise<Buffer[]> {
  const broker = new MemoryBroker();
  broker.createStream(from);
  broker.createStream(to);
  for (const chunk of encodeSource(source)) {
    if (chunk.messages.length > 0)
      broker.append(from, chunk.messages, { timestamp: chunk.timestamp });
  }
  await buildJob(spec, broker.source(from), broker.target(to, { producer: 'job' })).run({
    untilCaughtUp: true,
  });
  return broker.messages(to).map((m) => Buffer.from(m.bytes));
}

function onRabbit(source: SourceSpec, spec: JobSpec, from: string, to: string): Promise<Buffer[]> {
  const messages = encodeSource(source).flatMap((c) => c.messages);
  return targetAfterJob(real.rabbit, { source: from, target: to }, messages, async () => {
    const target = real.rabbit.target(to, { producer: 'job' });
    await buildJob(spec, real.rabbit.source(from), target).run({ untilCaughtUp: true });
    await target.close();
  });
}

const windows = EVERY_WINDOW_KIND;

describe('the embedded broker and RabbitMQ', () => {
  // Event time comes from the messages (creation time or value), never from chunk
  // timestamps, which the two brokers set differently.
  const scenarios = windows.flatMap((window, w) =>
    packings.map((packing, p) => {
      const seed = 1000 + 10 * w + p;
      const [source] = fc.sample(sourceArb({ garbage: true, minLength: 40 }), { seed, numRuns: 1 });
      const [job] = fc.sample(jobArb({ deadLetter: true }), { seed, numRuns: 1 });
      return {
        source: source as SourceSpec,
        spec: { ...(job as JobSpec), window, pack: packing.pack, format: packing.format },
      };
    }),
  );

  it.each(
    scenarios.map((s) => [`${s.spec.window.kind} packed as ${packingName(s.spec)}`, s] as const),
  )('should write byte-identical target streams for %s', async (_name, { source, spec }) => {
    const { memory, rabbit } = await onBoth(source, spec);
    expect(memory.length).toBeGreaterThan(1);
    expect(rabbit).toEqual(memory);
    expectEveryMessageCountedOnce(stepsOf(rabbit));
  });

  it('should agree on random scenarios', async () => {
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: true }),
        jobArb({ deadLetter: true }),
        async (source, spec) => {
          const { memory, rabbit } = await onBoth(source, spec);
          expect(rabbit).toEqual(memory);
        },
      ),
      { numRuns: Number(process.env.DIFFERENTIAL_RUNS ?? 25) },
    );
  });
});
