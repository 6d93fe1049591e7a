// The embedded broker must agree with RabbitMQ on a job over several inputs: the partitions of a
// super stream, listed as the inputs of `mergeInputs`, holding the same messages on both, read
// by the same job in two runs (the first over the first part of every input, the second, after
// the rest was appended, from the first run's merge records), give byte-identical targets, for
// each event-time window kind, every packing in turn. The inputs are random (skew between them,
// disorder, late and filtered messages, idle stretches in event time) and never left out as
// idle (`idleAfter: 'never'`: leaving out is a wall-clock decision, recorded in the results).
//
// A partitioned stage 1's result streams as the inputs (`fromResults` sources): see
// ./merged-results.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeResult, jsonMessage, type Source, type Target } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import {
  mergedJobOver,
  mergedScenarioArb,
  type InputSpec,
  type MergedJobSpec,
  type MergedScenario,
  type MergedWindow,
} from '../support/arbitraries/merged-inputs-scenario.js';
import { packingName, packings } from '../support/arbitraries/scenario.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();
const PRODUCER = 'merged-diff-job';

/** The messages of each input, in offset order, cut in two: before the first run, and after. */
function parts(inputs: readonly InputSpec[]): { first: Uint8Array[][]; rest: Uint8Array[][] } {
  const messages = inputs.map((input) => input.chunks.flat().map((m) => jsonMessage(m)));
  return {
    first: messages.map((all) => all.slice(0, Math.floor(all.length / 2))),
    rest: messages.map((all) => all.slice(Math.floor(all.length / 2))),
  };
}

/** Runs the job over `sources` to `target` until it has caught up. */
async function runOnce(sources: Source[], target: Target, spec: MergedJobSpec): Promise<void> {
  await mergedJobOver(sources, target, spec).run({ untilCaughtUp: true });
}

async function onMemory(
  scenario: MergedScenario,
  superStream: string,
  to: string,
): Promise<Buffer[]> {
  const broker = new MemoryBroker();
  const partitions = broker.createSuperStream(superStream, { partitions: scenario.inputs.length });
  broker.createStream(to);
  const { first, rest } = parts(scenario.inputs);
  const run = (): Promise<void> =>
    runOnce(
      partitions.map((partition) => broker.source(partition)),
      broker.target(to, { producer: PRODUCER }),
      scenario.job,
    );
  for (const part of [first, rest]) {
    partitions.forEach((partition, p) => {
      const messages = part[p] as Uint8Array[];
      if (messages.length > 0) broker.append(partition, messages);
    });
    await run();
  }
  return broker.messages(to).map((message) => Buffer.from(message.bytes));
}

async function onRabbit(
  scenario: MergedScenario,
  superStream: string,
  to: string,
): Promise<Buffer[]> {
  const partitions = await real.rabbit.createSuperStream(superStream, {
    partitions: scenario.inputs.length,
  });
  await real.rabbit.createStream(to);
  try {
    const { first, rest } = parts(scenario.inputs);
    for (const part of [first, rest]) {
      for (const [p, partition] of partitions.entries()) {
        await publishAll(real.rabbit, partition, part[p] as Uint8Array[]);
      }
      const target = real.rabbit.target(to, { producer: PRODUCER });
      await runOnce(
        partitions.map((partition) => real.rabbit.source(partition)),
        target,
        scenario.job,
      );
      await target.close();
    }
    return (await readAll(real.rabbit, to)).map((bytes) => Buffer.from(bytes));
  } finally {
    await real.rabbit.deleteSuperStream(superStream);
    await real.rabbit.deleteStream(to);
  }
}

const kinds: readonly MergedWindow['kind'][] = ['tumbling', 'hopping', 'session'];

describe('a job over several inputs on the embedded broker and on RabbitMQ', () => {
  // One scenario per window kind, each with the next packing, and a fourth with the last one;
  // inputs of 60 messages or more (fewer often close no window), 3 or 4 of them in the last two.
  const scenarios = packings.map((packing, s) => {
    const sizable = mergedScenarioArb.filter(
      ({ inputs }) =>
        inputs.length >= (s < 2 ? 2 : 3) &&
        inputs.every((input) => input.chunks.flat().length >= 60),
    );
    const [sampled] = fc.sample(sizable, { seed: 3005 + s, numRuns: 1 });
    const scenario = sampled as MergedScenario;
    const kind = kinds[s % kinds.length] as MergedWindow['kind'];
    const job: MergedJobSpec = {
      ...scenario.job,
      window: { kind, grace: scenario.job.window.grace },
      packing,
    };
    return { ...scenario, job };
  });

  it.each(
    scenarios.map(
      (s) =>
        [
          `${s.inputs.length} partitions, ${s.job.window.kind} packed as ${packingName(s.job.packing)}`,
          s,
        ] as const,
    ),
  )('should write byte-identical results over %s, in two runs', async (_name, scenario) => {
    // The same names on both: they are in the results (the inputs, source and producer).
    const [superStream, to] = [uniqueStream('mdiff-source'), uniqueStream('mdiff-target')];

    const memory = await onMemory(scenario, superStream, to);
    const rabbit = await onRabbit(scenario, superStream, to);

    expect(memory.length).toBeGreaterThanOrEqual(10);
    expect(rabbit).toEqual(memory);
    // The second run resumed from a merge record reading some input from past its start.
    const records = memory.map((bytes) => decodeResult(bytes).recovery?.merge);
    expect(records.some((record) => record?.inputs.some((input) => input.from > 0n))).toBe(true);
  });
});
