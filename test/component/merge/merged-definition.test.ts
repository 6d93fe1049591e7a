// A job over several inputs on the embedded broker: its definition (`sw-job`) lists its inputs in
// order, and a start that finds its producer's last result written over another list (other
// streams, another order, one input) stops before publishing anything, with or without
// `allowDefinitionChange`. Its results carry the merge record at their resume offset
// (`sw-merge`), and a restart reads each input from it, publishing nothing again.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  DefinitionChangeRefusedError,
  JobDefinitionError,
  jsonMessage,
  lastWriteId,
  mergeInputs,
  RecoveryError,
  ResultProperty,
  type Source,
} from '../../../src/index.js';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { MemoryBroker } from '../../../src/memory/index.js';

interface Order {
  readonly at: number;
  readonly amount: number;
}

function ordersBroker(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  for (const stream of ['eu', 'us', 'asia', 'revenue']) broker.createStream(stream);
  const put = (stream: string, times: readonly number[]) =>
    broker.append(
      stream,
      times.map((at) => jsonMessage({ at, amount: 1 })),
    );
  put('eu', [1_000, 61_000, 125_000]);
  put('us', [2_000, 30_000, 90_000, 130_000]);
  put('asia', [3_000, 70_000, 140_000]);
  return broker;
}

function revenueJob(
  broker: MemoryBroker,
  inputs: readonly Source[] | Source,
  allowDefinitionChange = false,
) {
  const start = Array.isArray(inputs)
    ? aggregate<Order>(mergeInputs(inputs, { idleAfter: 'never' }))
    : aggregate<Order>(inputs as Source);
  return start
    .eventTime((order) => order.at)
    .tumbling('1m', { grace: 0 })
    .reduce((sum, order) => sum + order.amount, 0)
    .to(broker.target('revenue', { producer: 'revenue-per-minute' }), { allowDefinitionChange });
}

const revenue = (broker: MemoryBroker) =>
  broker.messages('revenue').map((message) => decodeResult<number>(message.bytes));

describe('the definition of a job over several inputs', () => {
  it('lists its inputs in order, and names the merge as the source', async () => {
    const broker = ordersBroker();
    const sources = [broker.source('eu'), broker.source('us')];
    await revenueJob(broker, sources).run({ untilCaughtUp: true });
    const [first] = revenue(broker);
    expect(first?.source).toBe('merge(eu,us)');
    expect(first?.definition).toBe(
      '{"inputs":["eu","us"],"maxOutOfOrderness":0,"source":"merge(eu,us)","window":"tumbling(1m, grace=0ms)"}',
    );
  });

  it('refuses a start over another list of inputs, before publishing anything', async () => {
    const broker = ordersBroker();
    await revenueJob(broker, [broker.source('eu'), broker.source('us')]).run({
      untilCaughtUp: true,
    });
    const stored = broker.messages('revenue').length;
    const others: (readonly Source[] | Source)[] = [
      [broker.source('us'), broker.source('eu')], // another order
      [broker.source('eu'), broker.source('us'), broker.source('asia')], // one more
      [broker.source('eu'), broker.source('asia')], // another stream
      broker.source('eu'), // one input, not merged
    ];
    for (const inputs of others) {
      await expect(revenueJob(broker, inputs).run({ untilCaughtUp: true })).rejects.toThrow(
        JobDefinitionError,
      );
      // An event-time job's windows would be lost or rebuilt wrong: refused even when asked.
      await expect(revenueJob(broker, inputs, true).run({ untilCaughtUp: true })).rejects.toThrow(
        DefinitionChangeRefusedError,
      );
    }
    await expect(
      revenueJob(broker, [broker.source('us'), broker.source('eu')], true).run({
        untilCaughtUp: true,
      }),
    ).rejects.toThrow(
      `its publishing ids are merged positions of the inputs ["eu","us"], not of ["us","eu"]`,
    );
    expect(broker.messages('revenue').length).toBe(stored);
  });
});

describe('the merge record in the results', () => {
  it('rides on every result (sw-merge), and a restart reads every input from it, publishing nothing again', async () => {
    const broker = ordersBroker();
    const sources = () => [broker.source('eu'), broker.source('us'), broker.source('asia')];
    await revenueJob(broker, sources()).run({ untilCaughtUp: true });
    expect(revenue(broker).map((result) => [result.lastOffset, result.outputs[0]?.value])).toEqual([
      [4n, 4], // [0, 1m): eu 1s, us 2s, asia 3s, us 30s; closed by eu's 61s, at position 4
    ]);
    // It resumes at 4, where [1m, 2m) begins: each input from its first message at or after it.
    const properties = decodeMessage(
      broker.messages('revenue')[0]?.bytes ?? new Uint8Array(),
    ).applicationProperties;
    expect(properties?.[ResultProperty.merge]).toBe(
      '{"after":[30000,1,"1"],"inputs":[["1",1000],["2",30000],["1",3000]]}',
    );
    expect(revenue(broker)[0]?.recovery?.merge).toEqual({
      position: 4n,
      after: { mergeTime: 30_000, input: 1, offset: 1n },
      inputs: [
        { from: 1n, maxEventTime: 1_000, floors: [] },
        { from: 2n, maxEventTime: 30_000, floors: [] },
        { from: 1n, maxEventTime: 3_000, floors: [] },
      ],
    });
    // More of each input: the restart reads each one again from its record and closes
    // [1m, 2m) (eu 61s, asia 70s, us 90s) at eu's 125s, position 7.
    for (const [stream, at] of [
      ['eu', 185_000],
      ['us', 190_000],
      ['asia', 200_000],
    ] as const) {
      broker.append(stream, [jsonMessage({ at, amount: 1 })]);
    }
    const summary = await revenueJob(broker, sources()).run({ untilCaughtUp: true });
    expect(summary).toEqual({ results: 1, duplicates: 0, restarts: 0 });
    expect(
      revenue(broker).map((result) => [
        result.firstOffset,
        result.lastOffset,
        result.outputs.map((o) => [o.start, o.value]),
      ]),
    ).toEqual([
      [0n, 4n, [[0, 4]]],
      [5n, 7n, [[60_000, 3]]],
    ]);
  });

  it('stops a restart whose last result carries no merge record of as many inputs (RecoveryError)', async () => {
    const broker = ordersBroker();
    // A result without a definition to check (as `encodeResult` writes it given none), and
    // with the recovery state of a job over one input.
    const foreign = encodeResult(
      {
        firstOffset: 0n,
        lastOffset: 2n,
        window: { start: 0, end: 60_000 },
        messages: 3,
        outputs: [{ key: null, count: 2, value: 2, start: 0, end: 60_000 }],
        late: [],
        lateDropped: 0,
        filtered: 0,
        deadLetters: [],
        recovery: { watermark: 61_000, offset: 2n, offsetWatermark: 30_000 },
      },
      { source: 'merge(eu,us)', producer: 'revenue-per-minute', window: 'tumbling(1m, grace=0ms)' },
      'single',
    );
    await broker
      .target('revenue', { producer: 'revenue-per-minute' })
      .publish(lastWriteId(2n), foreign);
    const running = revenueJob(broker, [broker.source('eu'), broker.source('us')]).run({
      untilCaughtUp: true,
    });
    await expect(running).rejects.toThrow(RecoveryError);
    await expect(running).rejects.toThrow(
      'its result carries no merge record (written by a job over one input)',
    );
    expect(broker.messages('revenue').length).toBe(1);
  });
});
