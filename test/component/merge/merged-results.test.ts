// Stage 2 over a partitioned stage 1 on the embedded broker: `mergeInputs([fromResults(...),
// ...])`. A stage-1 result is ONE item of the merge, placed by the least event time of its
// values; each value goes to the windows of its own time, and the greatest moves its input's
// watermark. By example, for every packing of stage 1: a result holding three windows, one above
// the time it is merged at, is neither late nor held back; the 'count' policy for stage 1's
// late values; a message that is no result stops the job naming its input and offset.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  fromResults,
  jsonMessage,
  mergeInputs,
  ProcessingError,
  type ResultsSourceOptions,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { packingName, packings } from '../../support/arbitraries/scenario.js';

interface Reading {
  readonly sensor: string;
  readonly at: number;
  readonly value: number;
}

/**
 * Stage 1 allows 1 s of grace. Partition 0 closes [0, 1s) of s1 and s2 and [1s, 2s) of s1 in
 * ONE result (at 5 s); partition 1 closes [0, 1s) at 2.5 s and [2s, 3s) at 6 s. Later readings
 * close [5s, 6s) and [6s, 7s).
 */
const PARTITIONS: readonly (readonly Reading[])[] = [
  [
    { sensor: 's1', at: 0, value: 1 },
    { sensor: 's2', at: 100, value: 2 },
    { sensor: 's1', at: 1_100, value: 4 },
    { sensor: 's1', at: 5_000, value: 8 },
    { sensor: 's1', at: 9_000, value: 16 },
  ],
  [
    { sensor: 's1', at: 500, value: 32 },
    { sensor: 's1', at: 2_500, value: 64 },
    { sensor: 's1', at: 6_000, value: 128 },
    { sensor: 's1', at: 9_000, value: 256 },
  ],
];

const results = (p: number) => `results-${p}`;

/** fromResults options under which stage 2 receives outputs only. */
type OutputsOnly = ResultsSourceOptions & {
  readonly late: 'skip' | 'count';
  readonly deadLetters: 'skip';
};

/** The partitions, stage 1 run over each (per sensor and second), and an empty 'totals'. */
async function stageOne(
  packing: (typeof packings)[number],
  partitions: readonly (readonly Reading[])[] = PARTITIONS,
): Promise<MemoryBroker> {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('totals');
  for (const [p, readings] of partitions.entries()) {
    broker.createStream(`readings-${p}`);
    broker.createStream(results(p));
    broker.append(
      `readings-${p}`,
      readings.map((reading) => jsonMessage(reading)),
    );
    await aggregate<Reading>(broker.source(`readings-${p}`))
      .eventTime((reading) => reading.at)
      .key((reading) => reading.sensor)
      .tumbling(1_000, { grace: 1_000 })
      .late('side')
      .reduce((sum, reading) => sum + reading.value, 0)
      .to(broker.target(results(p), { producer: `per-sensor-${p}` }), packing)
      .run({ untilCaughtUp: true });
  }
  return broker;
}

/** Stage 2: the total of every sensor per second, over both partitions' results. */
function stageTwo(broker: MemoryBroker, options: OutputsOnly, partitions = 2) {
  const inputs = Array.from({ length: partitions }, (_, p) =>
    fromResults<number>(broker.source(results(p)), options),
  );
  return aggregate(mergeInputs(inputs, { idleAfter: 'never' }))
    .tumbling(1_000, { grace: 0 })
    .late('side')
    .reduce((sum, output) => sum + output.value, 0)
    .to(broker.target('totals', { producer: 'total-per-second' }));
}

const totals = (broker: MemoryBroker) =>
  broker.messages('totals').map((message) => decodeResult<number>(message.bytes));

const SKIP: OutputsOnly = { late: 'skip', deadLetters: 'skip' };

describe('stage 2 over the results of a partitioned stage 1', () => {
  it.each(packings.map((packing) => [packingName(packing), packing] as const))(
    'should total each second over both partitions, none late, from stage 1 packed as %s',
    async (_name, packing) => {
      const broker = await stageOne(packing);
      if (packing.pack !== 'batch') {
        // Partition 0's result at 5 s holds three windows: 0 (s1), 0 (s2) and 1 s.
        const [first] = broker.messages(results(0)).map((m) => decodeResult<number>(m.bytes));
        expect(first?.outputs.map((o) => [o.start, o.key])).toEqual([
          [0, 's1'],
          [0, 's2'],
          [1_000, 's1'],
        ]);
      }
      await stageTwo(broker, SKIP).run({ untilCaughtUp: true });
      // Partition 0 merged up to 5 s, partition 1 to 6 s: released below 5 s, the last item
      // partition 1's [2s, 3s) at 2 s, which closes [0, 1s) and [1s, 2s). Partition 0's 1 s
      // went in with its result, merged at 0, and was not late when the 2 s came.
      // (Packed as a batch, each window is a message of its own: the 1 s closes [0, 1s).)
      const published = totals(broker);
      expect(published.flatMap((r) => r.outputs.map((o) => [o.start, o.value, o.count]))).toEqual([
        [0, 1 + 2 + 32, 3],
        [1_000, 4, 1],
      ]);
      expect(published.length).toBe(packing.pack === 'batch' ? 2 : 1);
      expect(published.every((r) => r.late.length === 0 && r.lateDropped === 0)).toBe(true);
    },
  );

  it("should count stage 1's late values under late: 'count', and pass them under 'pass'", async () => {
    // Partition 1's 300 ms comes after its 2.5 s closed [0, 1s): late in stage 1, kept aside.
    const partitions = [PARTITIONS[0] as Reading[], [...(PARTITIONS[1] as Reading[])]];
    partitions[1]?.splice(2, 0, { sensor: 's1', at: 300, value: 512 });
    const counting = await stageOne({ pack: 'single' }, partitions);
    await stageTwo(counting, { late: 'count', deadLetters: 'skip' }).run({ untilCaughtUp: true });
    expect(totals(counting).map((r) => [r.lateDropped, r.outputs.length])).toEqual([[1, 2]]);

    const passing = await stageOne({ pack: 'single' }, partitions);
    const inputs = [0, 1].map((p) =>
      fromResults<number>(passing.source(results(p)), { late: 'pass', deadLetters: 'skip' }),
    );
    await aggregate(mergeInputs(inputs, { idleAfter: 'never' }))
      .tumbling(1_000, { grace: 0 })
      .late('side')
      .reduce((sum, value) => sum + (value.type === 'late' ? 0 : value.value), 0)
      .to(passing.target('totals', { producer: 'total-per-second' }))
      .run({ untilCaughtUp: true });
    // The late value goes at its result's window start (2 s), inside [2s, 3s): not closed here.
    expect(totals(passing).map((r) => r.outputs.map((o) => [o.start, o.count]))).toEqual([
      [
        [0, 3],
        [1_000, 1],
      ],
    ]);
  });

  it('should stop at a message that is no result, naming its input and offset', async () => {
    const broker = await stageOne({ pack: 'single' });
    const offset = BigInt(broker.messages(results(1)).length);
    broker.append(results(1), [jsonMessage({ not: 'a result' })]);
    const error: unknown = await stageTwo(broker, SKIP)
      .run({ untilCaughtUp: true })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProcessingError);
    expect(error).toMatchObject({ stream: results(1), offset, stage: 'decode' });
  });
});
