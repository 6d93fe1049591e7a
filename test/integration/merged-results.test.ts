// Stage 2 over a partitioned stage 1 on RabbitMQ: readings on a 4-partition super stream, skewed
// between partitions and out of order within each; stage 1 per partition (the sum per sensor and
// minute, each to its own result stream), stage 2 the global total per minute over the four
// result streams (`mergeInputs([fromResults(...), ...])`). Run twice, the second time after the
// rest of the readings came (stage 2 resuming from its merge records): its totals are exactly
// what the readings add up to, and every stream is byte-identical to the same runs on the
// embedded broker. Once per packing of stage 1.
import { describe, expect, it } from 'vitest';
import { decodeResult, jsonMessage, type Source, type Target } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { packingName, packings } from '../support/arbitraries/scenario.js';
import { publishAll, rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import {
  MARKERS_FROM,
  PARTITIONS,
  readingsOf,
  referenceTotals,
  stageOne,
  stageTwo,
  type Packing,
} from '../support/jobs/two-stage-readings.js';

const real = rabbitForTests();
/** Readings per partition: about 12 minutes. */
const READINGS = 150;

interface Streams {
  readonly partitions: readonly string[];
  readonly results: readonly string[];
  readonly totals: string;
}

/** Each partition's messages, cut in two: before the first runs, and after. */
function parts(): { first: Uint8Array[][]; rest: Uint8Array[][] } {
  const messages = Array.from({ length: PARTITIONS }, (_, p) =>
    readingsOf(p, READINGS).map((reading) => jsonMessage(reading)),
  );
  return {
    first: messages.map((all) => all.slice(0, 70)),
    rest: messages.map((all) => all.slice(70)),
  };
}

/**
 * Both stages over `partitions`, on either broker, as `broker` makes sources and targets;
 * `close` lets a target go once its stage ran.
 */
async function runStages<T extends Target>(
  broker: {
    source(stream: string): Source;
    target(stream: string, options: { producer: string }): T;
  },
  streams: Streams,
  packing: Packing,
  close: (target: T) => Promise<void>,
): Promise<void> {
  for (const [p, partition] of streams.partitions.entries()) {
    const target = broker.target(streams.results[p] as string, { producer: `per-sensor-${p}` });
    await stageOne(broker.source(partition), target, packing).run({ untilCaughtUp: true });
    await close(target);
  }
  const target = broker.target(streams.totals, { producer: 'total-per-minute' });
  await stageTwo(
    streams.results.map((stream) => broker.source(stream)),
    target,
  ).run({ untilCaughtUp: true });
  await close(target);
}

/** Every stream the stages wrote, by name. */
type Written = Record<string, Buffer[]>;

async function onMemory(streams: Streams, packing: Packing, superStream: string): Promise<Written> {
  const broker = new MemoryBroker();
  const partitions = broker.createSuperStream(superStream, { partitions: PARTITIONS });
  for (const stream of [...streams.results, streams.totals]) broker.createStream(stream);
  for (const part of Object.values(parts())) {
    partitions.forEach((partition, p) => broker.append(partition, part[p] ?? []));
    await runStages(broker, { ...streams, partitions }, packing, () => Promise.resolve());
  }
  const written: Written = {};
  for (const stream of [...streams.results, streams.totals]) {
    written[stream] = broker.messages(stream).map((message) => Buffer.from(message.bytes));
  }
  return written;
}

async function onRabbit(streams: Streams, packing: Packing, superStream: string): Promise<Written> {
  const { rabbit } = real;
  const partitions = await rabbit.createSuperStream(superStream, { partitions: PARTITIONS });
  for (const stream of [...streams.results, streams.totals]) await rabbit.createStream(stream);
  try {
    for (const part of Object.values(parts())) {
      for (const [p, partition] of partitions.entries()) {
        await publishAll(rabbit, partition, part[p] ?? []);
      }
      await runStages(rabbit, { ...streams, partitions }, packing, (target) => target.close());
    }
    const written: Written = {};
    for (const stream of [...streams.results, streams.totals]) {
      written[stream] = (await readAll(rabbit, stream)).map((bytes) => Buffer.from(bytes));
    }
    return written;
  } finally {
    await rabbit.deleteSuperStream(superStream);
    for (const stream of [...streams.results, streams.totals]) await rabbit.deleteStream(stream);
  }
}

const stageOnePackings = packings.filter((packing) => packing.format !== 'json');

describe('stage 2 over a partitioned stage 1, on RabbitMQ and on the embedded broker', () => {
  it.each(stageOnePackings.map((packing) => [packingName(packing), packing] as const))(
    'should total each minute exactly, byte-identical on both, stage 1 packed as %s',
    async (_name, packing) => {
      // The same names on both: they are in the results (the inputs, source and producer).
      const superStream = uniqueStream('mres-readings');
      const streams: Streams = {
        partitions: [],
        results: Array.from({ length: PARTITIONS }, (_, p) => uniqueStream(`mres-per-sensor-${p}`)),
        totals: uniqueStream('mres-totals'),
      };
      const memory = await onMemory(streams, packing, superStream);
      const rabbit = await onRabbit(streams, packing, superStream);
      expect(rabbit).toEqual(memory);
      // Stage 1's results hold several windows each (but packed as a batch): one a message.
      const outputsPerResult = streams.results.flatMap((stream) =>
        (memory[stream] ?? []).map((bytes) => decodeResult(bytes).outputs.length),
      );
      const several = outputsPerResult.filter((outputs) => outputs >= 2).length;
      if (packing.pack === 'batch') expect(several).toBe(0);
      else expect(several).toBeGreaterThanOrEqual(20);

      const totals = (memory[streams.totals] ?? []).map((bytes) => decodeResult<number>(bytes));
      const published = new Map(
        totals
          .flatMap((result) => result.outputs)
          .filter((output) => output.start < MARKERS_FROM)
          .map((output) => [output.start, output.value]),
      );
      expect(published).toEqual(referenceTotals(READINGS));
      expect(totals.every((result) => result.late.length === 0 && result.lateDropped === 0)).toBe(
        true,
      );
      // The second runs resumed stage 2 from a merge record reading a result stream from past 0.
      const records = totals.map((result) => result.recovery?.merge);
      expect(records.some((record) => record?.inputs.some((input) => input.from > 0n))).toBe(true);
    },
  );
});
