// readResult on the embedded broker and on RabbitMQ: the same writes of three producers (and
// of a writer of non-AMQP bytes) on both, then the same questions: both answer what was
// published under the id, the first message of the write, or undefined. Two producers publish
// as a job does now (a step's one write under `lastWriteId` of its last offset), one as an
// earlier version did (under the offset itself).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastWriteId, type Target } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { Coverage } from '../support/arbitraries/coverage.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { producerTargets, resultMessages } from '../support/results/stored-results.js';
import type { PackMode } from '../../src/result-format/result-format.js';

const real = rabbitForTests();
const RUNS = 4;
const PRODUCERS = ['ours', 'billing', 'audit'] as const;

/** One write: a producer's result, or (producer 'garbage') bytes that are no AMQP message. */
interface Write {
  readonly producer: string;
  /** The last source offset of the step it holds. */
  readonly offset: bigint;
  readonly id: bigint;
  readonly messages: readonly Uint8Array[];
}

/**
 * The publishing id of `producer`'s step ending at `offset`: 'billing' (and the garbage
 * writer) as an earlier version, the offset itself; the others as a job now.
 */
const idOf = (producer: string, offset: bigint): bigint =>
  producer === 'billing' || producer === 'garbage' ? offset : lastWriteId(offset);

const writeSpec = fc.record({
  producer: fc.constantFrom(...PRODUCERS, 'garbage'),
  gap: fc.integer({ min: 1, max: 3 }),
  pack: fc.constantFrom<PackMode>('sections', 'batch'),
  outputs: fc.integer({ min: 1, max: 4 }),
});

type WriteSpec = typeof writeSpec extends fc.Arbitrary<infer T> ? T : never;

/** Each producer's steps end at offsets that increase by the spec's gap, as a job's do. */
function writesOf(specs: readonly WriteSpec[]): Write[] {
  const last = new Map<string, bigint>();
  return specs.map(({ producer, gap, pack, outputs }) => {
    const offset = (last.get(producer) ?? -1n) + BigInt(gap);
    last.set(producer, offset);
    const messages =
      producer === 'garbage'
        ? [new TextEncoder().encode(`not amqp ${offset}`)]
        : resultMessages(producer, offset, pack, outputs);
    return { producer, offset, id: idOf(producer, offset), messages };
  });
}

/**
 * The questions, at most 7 per producer, the ids of steps ending at: one past its last
 * step's offset, its last, 0, its first 'batch' result's, and three more from 0 to one past
 * its last.
 */
const questionsOf = (writes: readonly Write[], seed: number) =>
  PRODUCERS.flatMap((producer) => {
    const own = writes.filter((w) => w.producer === producer);
    const top = own.length === 0 ? 0 : Number(own[own.length - 1]?.offset) + 1;
    const batch = own.find((w) => w.messages.length > 1);
    const picks = new Set([
      top,
      top - 1,
      0,
      ...(batch === undefined ? [] : [Number(batch.offset)]),
      ...Array.from({ length: 3 }, (_, i) => (seed * (i + 7)) % (top + 1)),
    ]);
    return [...picks]
      .filter((offset) => offset >= 0)
      .map((offset) => ({ producer, id: idOf(producer, BigInt(offset)) }));
  });

async function publishOn(writes: readonly Write[], targetOf: (producer: string) => Target) {
  for (const write of writes) await targetOf(write.producer).publish(write.id, write.messages);
}

describe('readResult on the embedded broker and on RabbitMQ', () => {
  it('answers the same, the first message of the write under the id or undefined, on both', async () => {
    const coverage = new Coverage('readResult on both brokers');
    await fc.assert(
      fc.asyncProperty(
        fc.array(writeSpec, { minLength: 20, maxLength: 120 }),
        fc.nat({ max: 1_000 }),
        async (specs, seed) => {
          coverage.run();
          const writes = writesOf(specs);
          const memory = new MemoryBroker();
          memory.createStream('results');
          const stream = await real.newStream('lookup-diff');
          const { targetOf: rabbitTarget, close } = producerTargets(real.rabbit, stream);
          try {
            // One target per producer, as on RabbitMQ: a second one of a name is refused.
            const memoryTargets = new Map<string, Target>();
            const memoryTarget = (producer: string): Target => {
              const target = memoryTargets.get(producer) ?? memory.target('results', { producer });
              memoryTargets.set(producer, target);
              return target;
            };
            await publishOn(writes, memoryTarget);
            await publishOn(writes, rabbitTarget);
            const answers = new Set<string>();
            for (const { producer, id } of questionsOf(writes, seed)) {
              const written = writes.find((w) => w.producer === producer && w.id === id);
              const onMemory = await memoryTarget(producer).readResult(id);
              const onRabbit = await rabbitTarget(producer).readResult(id);
              expect(onRabbit).toEqual(onMemory);
              expect(onMemory).toEqual(written?.messages[0]);
              if (written === undefined) answers.add('absent');
              else answers.add(written.messages.length > 1 ? 'batch found' : 'found');
            }
            // Once a run each: every run should ask all three kinds of question.
            for (const answer of answers) coverage.count(answer);
          } finally {
            await close();
          }
        },
      ),
      { numRuns: RUNS },
    );
    coverage.expectRates({ found: 0.95, absent: 0.95, 'batch found': 0.95 });
  });
});
