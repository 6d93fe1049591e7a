import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryBroker } from '../../src/memory/index.js';
import { crashArb, runThroughCrashes } from '../support/crashes.js';
import {
  buildJob,
  encodeSource,
  jobArb,
  sourceArb,
  type JobSpec,
  type SourceSpec,
} from '../support/scenario.js';
import {
  expectEveryMessageCountedOnce,
  expectStrictlyIncreasing,
  stepsOf,
} from '../support/target-stream.js';

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200);

function brokerWith(source: SourceSpec): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('source');
  broker.createStream('target');
  for (const chunk of encodeSource(source)) {
    if (chunk.messages.length > 0)
      broker.append('source', chunk.messages, { timestamp: chunk.timestamp });
  }
  return broker;
}

function job(broker: MemoryBroker, spec: JobSpec) {
  return buildJob(spec, broker.source('source'), broker.target('target', { producer: 'job-1' }));
}

async function uninterrupted(source: SourceSpec, spec: JobSpec): Promise<MemoryBroker> {
  const broker = brokerWith(source);
  await job(broker, spec).run({ untilCaughtUp: true });
  return broker;
}

describe('effectively-once on the embedded broker', () => {
  it('should write a byte-identical target after any number of crashes and restarts', async () => {
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: true }),
        jobArb({ deadLetter: true }),
        crashArb,
        async (source, spec, crashes) => {
          const expected = await uninterrupted(source, spec);

          const broker = brokerWith(source);
          await runThroughCrashes(broker, 'target', crashes, () => job(broker, spec));

          const bytes = (b: MemoryBroker) => b.messages('target').map((m) => m.bytes);
          expect(bytes(broker)).toEqual(bytes(expected));
          expectStrictlyIncreasing(
            broker.chunks('target').map((c) => c.writer?.publishingId ?? -1n),
          );
          expectEveryMessageCountedOnce(stepsOf(bytes(broker)));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('should count every source message in exactly one result for every window kind', async () => {
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: true }),
        jobArb({ deadLetter: true }),
        async (source, spec) => {
          const broker = await uninterrupted(source, spec);
          const steps = stepsOf(broker.messages('target').map((m) => m.bytes));
          expectEveryMessageCountedOnce(steps);
          // Every message up to the last published step is accounted for; the rest is the open step.
          const counted = steps.reduce((n, parts) => n + (parts[0]?.messages ?? 0), 0);
          const total = source.chunks.reduce((n, c) => n + c.entries.length, 0);
          expect(counted).toBeLessThanOrEqual(total);
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('should produce the same bytes when a finished job is run again from scratch', async () => {
    await fc.assert(
      fc.asyncProperty(
        sourceArb({ garbage: false }),
        jobArb({ deadLetter: false }),
        async (source, spec) => {
          const first = await uninterrupted(source, spec);
          const again = brokerWith(source);
          // A second target, as a replay of the whole source by a new producer would write it.
          await job(again, spec).run({ untilCaughtUp: true });
          await job(again, spec).run({ untilCaughtUp: true }); // a restart after the end changes nothing
          expect(again.messages('target').map((m) => m.bytes)).toEqual(
            first.messages('target').map((m) => m.bytes),
          );
        },
      ),
      { numRuns: RUNS },
    );
  });
});
