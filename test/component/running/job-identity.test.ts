// Issue 17 item 3: derived producer names are injective (for any names:
// test/property/producer-names.test.ts), and "one job definition per producer name" is
// checked: a result carries its job's definition (`sw-job`), and a start that finds its
// producer's last result written by another definition stops before publishing anything.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  decodeResult,
  DefinitionChangeRefusedError,
  JobDefinitionError,
  jsonMessage,
  lastWriteId,
  partitionProducer,
  type PackMode,
  type SingleFormat,
  type Target,
  type TumblingSize,
} from '../../../src/index.js';
import { encodeResult } from '../../../src/result-format/result-encoder.js';
import { MemoryBroker } from '../../../src/memory/index.js';

interface Sale {
  readonly shop: string;
  readonly amount: number;
}

/** A broker with stream 'sales' holding `amounts` (one chunk each), and an empty 'totals'. */
function salesBroker(amounts: readonly number[]): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('sales');
  broker.createStream('totals');
  appendSales(broker, 'sales', amounts);
  return broker;
}

function appendSales(broker: MemoryBroker, stream: string, amounts: readonly number[]): void {
  for (const amount of amounts) {
    broker.append(stream, [jsonMessage({ shop: 's', amount })], { timestamp: 0 });
  }
}

/** Sums every `n` sales of `source` into 'totals' under producer 'totals-job'. */
function countJob(
  broker: MemoryBroker,
  n: number,
  options: { source?: string; allowDefinitionChange?: boolean; pack?: PackMode } = {},
) {
  const { source = 'sales', ...targetOptions } = options;
  return aggregate<Sale>(broker.source(source))
    .count(n)
    .reduce((sum, sale) => sum + sale.amount, 0)
    .to(broker.target('totals', { producer: 'totals-job' }), targetOptions);
}

/** What 'totals' holds, decoded. */
const totals = (broker: MemoryBroker) =>
  broker.messages('totals').map((message) => decodeResult<number>(message.bytes));

describe('derived producer names', () => {
  it("give job 'sum' over 'orders-eu-0' and job 'sum-orders' over 'eu-0' two names, so the second reads all its input", async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createSuperStream('orders', { bindingKeys: ['eu-0'] });
    broker.createSuperStream('eu', { bindingKeys: ['0'] });
    broker.createStream('totals');
    appendSales(broker, 'orders-eu-0', [1, 2, 3, 4, 5, 6]);
    appendSales(broker, 'eu-0', [10, 20, 30, 40]);
    const job = (superStream: string, name: string) =>
      aggregate<Sale>(broker.superStreamSource(superStream))
        .count(2)
        .reduce((sum, sale) => sum + sale.amount, 0)
        .toPartitions((p) => broker.target('totals', { producer: p.producer }), { name });
    const first = await job('orders', 'sum').run({ untilCaughtUp: true });
    const second = await job('eu', 'sum-orders').run({ untilCaughtUp: true });
    expect([first.results, second.results]).toEqual([3, 2]);
    const byProducer = new Map<string, number[]>();
    for (const result of totals(broker)) {
      const values = byProducer.get(result.producer) ?? [];
      values.push(...result.outputs.map((o) => o.value));
      byProducer.set(result.producer, values);
    }
    expect(byProducer).toEqual(
      new Map([
        ['sum@orders-eu-0', [3, 7, 11]],
        ['sum-orders@eu-0', [30, 70]],
      ]),
    );
  });

  it("are exported as partitionProducer, the name .toPartitions() gives each partition's target", async () => {
    const broker = new MemoryBroker({ now: () => 0 });
    broker.createSuperStream('orders', { bindingKeys: ['eu@0', 'us%1'] });
    broker.createStream('totals');
    appendSales(broker, 'orders-eu@0', [1, 2]);
    const given: string[] = [];
    await aggregate<Sale>(broker.superStreamSource('orders'))
      .count(2)
      .reduce((sum, sale) => sum + sale.amount, 0)
      .toPartitions(
        (p) => (given.push(p.producer), broker.target('totals', { producer: p.producer })),
        { name: 'sum@eu%' },
      )
      .run({ untilCaughtUp: true });
    const streams = ['orders-eu@0', 'orders-us%1'];
    expect(given).toEqual(streams.map((stream) => partitionProducer('sum@eu%', stream)));
    expect(given).toEqual(['sum%40eu%25@orders-eu@0', 'sum%40eu%25@orders-us%1']);
  });

  it('keep a job name without % or @ readable', () => {
    expect(partitionProducer('rollup-1m', 'orders-0')).toBe('rollup-1m@orders-0');
    expect(partitionProducer('a@b%', 'x@y')).toBe('a%40b%25@x@y');
  });
});

describe('one job definition per producer name', () => {
  it('carries the definition in every packing, readable by decodeResult', async () => {
    const packings: { pack: PackMode; format?: SingleFormat }[] = [
      { pack: 'sections' },
      { pack: 'batch' },
      { pack: 'single' },
      { pack: 'single', format: 'json' },
    ];
    const step = {
      firstOffset: 0n,
      lastOffset: 1n,
      window: { start: 0, end: 10 },
      messages: 2,
      outputs: [
        { key: 'a', count: 1, value: 1 },
        { key: 'b', count: 1, value: 2 },
      ],
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    };
    const metadata = { source: 's', producer: 'p', window: 'count(2)', definition: 'D' };
    for (const { pack, format } of packings) {
      const messages = encodeResult(step, metadata, pack, format);
      expect(messages.map((bytes) => decodeResult(bytes).definition)).toEqual(
        messages.map(() => 'D'),
      );
    }
    // And what a job writes: its source and window, canonical JSON.
    const broker = salesBroker([1, 2]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    expect(totals(broker).map((r) => r.definition)).toEqual([
      '{"source":"sales","window":"count(2)"}',
    ]);
  });

  it('stops a job whose producer last published under another definition, naming both, before publishing anything', async () => {
    for (const pack of ['sections', 'batch', 'single'] as const) {
      const broker = salesBroker([1, 2, 3, 4]);
      await countJob(broker, 2, { pack }).run({ untilCaughtUp: true });
      appendSales(broker, 'sales', [5, 6]);
      const before = broker.messages('totals').map((m) => m.bytes);
      // The same producer name, another window: count(3) would end steps elsewhere.
      const running = countJob(broker, 3, { pack }).run({ untilCaughtUp: true });
      await expect(running).rejects.toBeInstanceOf(JobDefinitionError);
      await expect(running).rejects.toMatchObject({
        code: 'JOB_DEFINITION_MISMATCH',
        stream: 'totals',
        producer: 'totals-job',
        publishingId: lastWriteId(3n),
        found: '{"source":"sales","window":"count(2)"}',
        expected: '{"source":"sales","window":"count(3)"}',
      });
      await expect(running).rejects.toThrow(
        `producer 'totals-job' on stream 'totals' belongs to another job definition: its last result (publishing id ${lastWriteId(3n)}) was written by {"source":"sales","window":"count(2)"}, this job is {"source":"sales","window":"count(3)"}`,
      );
      expect(broker.messages('totals').map((m) => m.bytes)).toEqual(before);
    }
  });

  it('stops a job reading another source under a name already used (a typo, two teams)', async () => {
    const broker = salesBroker([1, 2]);
    broker.createStream('refunds');
    appendSales(broker, 'refunds', [7, 8]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    const running = countJob(broker, 2, { source: 'refunds' }).run({ untilCaughtUp: true });
    await expect(running).rejects.toThrow(JobDefinitionError);
    expect(totals(broker)).toHaveLength(1);
  });

  it('stops an event-time job whose producer published only offset 0 under another definition', async () => {
    const broker = salesBroker([1]);
    await countJob(broker, 1).run({ untilCaughtUp: true });
    appendSales(broker, 'sales', [2]);
    const running = aggregate<Sale>(broker.source('sales'))
      .eventTime((s) => s.amount)
      .tumbling(10, { grace: 0 })
      .reduce((sum, sale) => sum + sale.amount, 0)
      .to(broker.target('totals', { producer: 'totals-job' }))
      .run({ untilCaughtUp: true });
    await expect(running).rejects.toMatchObject({
      code: 'JOB_DEFINITION_MISMATCH',
      publishingId: lastWriteId(0n),
      expected: '{"maxOutOfOrderness":0,"source":"sales","window":"tumbling(10ms, grace=0ms)"}',
    });
    expect(totals(broker)).toHaveLength(1);
  });

  it('restarts a job of the same definition from its last result', async () => {
    const broker = salesBroker([1, 2, 3, 4]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    appendSales(broker, 'sales', [5, 6]);
    expect(await countJob(broker, 2).run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    expect(totals(broker).map((r) => [r.outputs[0]?.value, r.definition])).toEqual(
      [3, 7, 11].map((sum) => [sum, '{"source":"sales","window":"count(2)"}']),
    );
  });

  it('lets a job change its definition on purpose with allowDefinitionChange, from its last result on', async () => {
    const broker = salesBroker([1, 2, 3, 4]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    appendSales(broker, 'sales', [5, 6, 7]);
    const changed = countJob(broker, 3, { allowDefinitionChange: true });
    expect(await changed.run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    // Its results carry the new definition, so the next start needs the option no more.
    appendSales(broker, 'sales', [8, 9, 10]);
    expect(await countJob(broker, 3).run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    expect(totals(broker).map((r) => [r.outputs[0]?.value, r.definition])).toEqual([
      [3, '{"source":"sales","window":"count(2)"}'],
      [7, '{"source":"sales","window":"count(2)"}'],
      [18, '{"source":"sales","window":"count(3)"}'],
      [27, '{"source":"sales","window":"count(3)"}'],
    ]);
  });

  it('refuses a new source even with allowDefinitionChange: its ids name offsets of the old stream', async () => {
    const broker = salesBroker([1, 2, 3, 4]);
    broker.createStream('refunds');
    appendSales(broker, 'refunds', [10, 20, 30, 40, 50, 60]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    // Resumed at offset 4 of 'refunds', it would skip 10, 20, 30 and 40.
    const running = countJob(broker, 2, { source: 'refunds', allowDefinitionChange: true }).run({
      untilCaughtUp: true,
    });
    await expect(running).rejects.toBeInstanceOf(DefinitionChangeRefusedError);
    await expect(running).rejects.toMatchObject({
      code: 'DEFINITION_CHANGE_REFUSED',
      stream: 'totals',
      producer: 'totals-job',
      publishingId: lastWriteId(3n),
      found: '{"source":"sales","window":"count(2)"}',
      expected: '{"source":"refunds","window":"count(2)"}',
    });
    await expect(running).rejects.toThrow(
      "its publishing ids are offsets of 'sales', not of 'refunds'",
    );
    expect(totals(broker)).toHaveLength(2);
  });

  it('refuses, even with allowDefinitionChange, a change from an event-time window, which would lose the windows open at the last result', async () => {
    const MINUTE = 60_000;
    const eventTimeJob = (
      broker: MemoryBroker,
      size: TumblingSize,
      allowDefinitionChange = false,
    ) =>
      aggregate<Sale>(broker.source('sales'))
        .eventTime((sale) => sale.amount * MINUTE)
        .maxOutOfOrderness('2m')
        .tumbling(size, { grace: 0 })
        .reduce((n) => n + 1, 0)
        .to(broker.target('totals', { producer: 'totals-job' }), { allowDefinitionChange });
    // Minutes 0, 6 and 9: minute 9 closes [0, 5m) (result 2); minute 6 is in the open [5m, 10m).
    // A 1m job would rebuild [6m, 7m) from offset 1 and see it closed by the re-read of
    // offset 2, so publish it never; a step job would resume at 3 and drop it.
    const changes: [string, (broker: MemoryBroker) => Promise<unknown>][] = [
      ['5m to 1m', (broker) => eventTimeJob(broker, '1m', true).run({ untilCaughtUp: true })],
      ['5m to 10m', (broker) => eventTimeJob(broker, '10m', true).run({ untilCaughtUp: true })],
      [
        'event time to count',
        (broker) =>
          countJob(broker, 2, { allowDefinitionChange: true }).run({ untilCaughtUp: true }),
      ],
    ];
    for (const [change, restart] of changes) {
      const broker = salesBroker([0, 6, 9]);
      await eventTimeJob(broker, '5m').run({ untilCaughtUp: true });
      appendSales(broker, 'sales', [30, 31]);
      const running = restart(broker);
      await expect(running, change).rejects.toBeInstanceOf(DefinitionChangeRefusedError);
      await expect(running, change).rejects.toThrow('after an event-time window');
      expect(totals(broker), change).toHaveLength(1);
    }
  });

  it('accepts a last result of the earlier format, which carries no definition', async () => {
    const broker = salesBroker([1, 2, 3, 4]);
    // What the version before job definitions wrote for offsets 0-1 (another process): no sw-job.
    const target: Target = broker.target('totals', {
      producer: 'totals-job',
      connection: 'before',
    });
    const earlier = encodeResult(
      {
        firstOffset: 0n,
        lastOffset: 1n,
        window: { start: 0, end: 0 },
        messages: 2,
        outputs: [{ key: null, count: 2, value: 3 }],
        late: [],
        lateDropped: 0,
        filtered: 0,
        deadLetters: [],
      },
      { source: 'sales', producer: 'totals-job', window: 'count(5)' },
      'sections',
    );
    await target.publish(1n, earlier);
    expect(decodeResult(earlier[0] as Uint8Array).definition).toBeUndefined();
    expect(await countJob(broker, 2).run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    // From there on, its results carry this job's definition.
    expect(totals(broker).map((r) => [r.outputs[0]?.value, r.definition])).toEqual([
      [3, undefined],
      [7, '{"source":"sales","window":"count(2)"}'],
    ]);
  });

  it("is not checked for a job writing its own encode's messages, which carry no definition", async () => {
    const broker = salesBroker([1, 2, 3, 4]);
    await countJob(broker, 2).run({ untilCaughtUp: true });
    appendSales(broker, 'sales', [5, 6, 7]);
    const own = aggregate<Sale>(broker.source('sales'))
      .count(3)
      .reduce((sum, sale) => sum + sale.amount, 0)
      .to(broker.target('totals', { producer: 'totals-job' }), {
        encode: (result) => new TextEncoder().encode(String(result.outputs[0]?.value)),
      });
    expect(await own.run({ untilCaughtUp: true })).toMatchObject({ results: 1 });
    expect(() =>
      aggregate<Sale>(broker.source('sales'))
        .count(3)
        .reduce((sum, sale) => sum + sale.amount, 0)
        .to(broker.target('totals', { producer: 'x' }), {
          encode: () => new Uint8Array(1),
          allowDefinitionChange: true,
        }),
    ).toThrow('allowDefinitionChange applies to the result format, not to your own encode');
  });
});
