// readResults on the embedded broker: whole results with their offsets, from anywhere.
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  jsonMessage,
  NotAResultError,
  readResults,
  type DecodedResult,
  type PackMode,
  type ReadResult,
  type ResultOf,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { encodeStep } from '../../../src/result-format/step-writes.js';
import {
  brokerWithReadings,
  reading,
  T0,
  totalOfReadings,
  type Reading,
} from '../../support/jobs/memory-job.js';

/** Six one-minute windows of keys a, b, c: five results of three outputs each. */
const readings = Array.from({ length: 18 }, (_, i) => reading('abc'[i % 3] as string, i, 20 * i));

const job = (broker: MemoryBroker, pack: PackMode) =>
  aggregate<Reading>(broker.source('source'))
    .tumbling('1m')
    .key((r) => r.sensor)
    .aggregate(totalOfReadings)
    .to(broker.target('target', { producer: 'p' }), { pack });

async function written(pack: PackMode): Promise<MemoryBroker> {
  const broker = brokerWithReadings(readings);
  await job(broker, pack).run({ untilCaughtUp: true });
  return broker;
}

async function collect<R>(iterable: AsyncIterable<ReadResult<R>>): Promise<ReadResult<R>[]> {
  const all: ReadResult<R>[] = [];
  for await (const item of iterable) all.push(item);
  return all;
}

const summary = (items: readonly ReadResult[]) =>
  items.map(({ offset, next, result }) => ({
    offset,
    next,
    lastOffset: result.lastOffset,
    keys: result.outputs.map((o) => o.key),
  }));

describe('readResults', () => {
  it('should read every result of a sections target with its offset, then stop when caught up', async () => {
    const broker = await written('sections');
    const read = await collect(readResults(broker.source('target'), { untilCaughtUp: true }));
    expect(summary(read)).toEqual(
      [2n, 5n, 8n, 11n, 14n].map((lastOffset, i) => ({
        offset: BigInt(i),
        next: BigInt(i + 1),
        lastOffset,
        keys: ['a', 'b', 'c'],
      })),
    );
  });

  it('should reassemble each batch into one result offset at its first part', async () => {
    const broker = await written('batch');
    const messages = broker.messages('target').map((m) => decodeResult(m.bytes));
    expect(messages).toHaveLength(15);
    const read = await collect(readResults(broker.source('target'), { untilCaughtUp: true }));
    expect(summary(read)).toEqual(
      [2n, 5n, 8n, 11n, 14n].map((lastOffset, i) => ({
        offset: BigInt(3 * i),
        next: BigInt(3 * i + 3),
        lastOffset,
        keys: ['a', 'b', 'c'],
      })),
    );
    expect(read.every(({ result }) => result.part === undefined)).toBe(true);
  });

  it('should read the same results from every packing', async () => {
    const results = async (pack: PackMode) =>
      (
        await collect(readResults((await written(pack)).source('target'), { untilCaughtUp: true }))
      ).map((r) => r.result);
    const sections = await results('sections');
    expect(await results('batch')).toEqual(sections);
    expect(await results('single')).toEqual(sections);
  });

  it('should start at an offset in the middle, passing over the rest of a batch begun before it', async () => {
    const broker = await written('batch');
    const fromMiddleOfBatch = await collect(
      readResults(broker.source('target'), { from: 7n, untilCaughtUp: true }),
    );
    expect(fromMiddleOfBatch.map((r) => r.offset)).toEqual([9n, 12n]);
    const fromItsStart = await collect(
      readResults(broker.source('target'), { from: 6n, untilCaughtUp: true }),
    );
    expect(fromItsStart.map((r) => r.offset)).toEqual([6n, 9n, 12n]);
  });

  it("should read on from a result's next offset without repeating or missing one", async () => {
    const broker = await written('sections');
    const [first] = await collect(readResults(broker.source('target'), { untilCaughtUp: true }));
    const rest = await collect(
      readResults(broker.source('target'), { from: first?.next, untilCaughtUp: true }),
    );
    expect(rest.map((r) => r.offset)).toEqual([1n, 2n, 3n, 4n]);
  });

  it('should stop at the end offset taken at the start, not at results written during the read', async () => {
    const broker = await written('sections');
    const read: bigint[] = [];
    for await (const { offset } of readResults(broker.source('target'), { untilCaughtUp: true })) {
      read.push(offset);
      if (offset === 0n)
        broker.append('target', [broker.messages('target')[0]?.bytes as Uint8Array]);
    }
    expect(read).toEqual([0n, 1n, 2n, 3n, 4n]);
  });

  it("should give only results written after the start with from 'next', and nothing when caught up", async () => {
    const broker = await written('sections');
    expect(
      await collect(readResults(broker.source('target'), { from: 'next', untilCaughtUp: true })),
    ).toEqual([]);
    const controller = new AbortController();
    const reading = collect(
      readResults(broker.source('target'), { from: 'next', signal: controller.signal }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    const copy = broker.messages('target')[4]?.bytes as Uint8Array;
    broker.append('target', [copy]);
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    expect((await reading).map((r) => r.offset)).toEqual([5n]);
  });

  it('should end cleanly, without an error, when aborted while waiting for more', async () => {
    const broker = await written('batch');
    const controller = new AbortController();
    const read: bigint[] = [];
    for await (const { offset } of readResults(broker.source('target'), {
      signal: controller.signal,
    })) {
      read.push(offset);
      if (offset === 12n) setImmediate(() => controller.abort());
    }
    expect(read).toEqual([0n, 3n, 6n, 9n, 12n]);
  });

  it('should end at once when the signal is already aborted, and on an empty stream when caught up', async () => {
    const broker = await written('sections');
    expect(
      await collect(readResults(broker.source('target'), { signal: AbortSignal.abort() })),
    ).toEqual([]);
    broker.createStream('empty');
    expect(await collect(readResults(broker.source('empty'), { untilCaughtUp: true }))).toEqual([]);
  });

  it('should name the stream and offset of a message that is not a result, or skip it when asked', async () => {
    const broker = await written('sections');
    broker.append('target', [jsonMessage({ not: 'a result' })]);
    broker.append('target', [broker.messages('target')[0]?.bytes as Uint8Array]);
    const error = await collect(
      readResults(broker.source('target'), { untilCaughtUp: true }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotAResultError);
    expect(error).toMatchObject({ stream: 'target', offset: 5n });
    expect((error as Error).message).toMatch(
      /^the message at offset 5 of stream 'target' is not a readable result: /,
    );
    const skipped = await collect(
      readResults(broker.source('target'), { untilCaughtUp: true, invalid: 'skip' }),
    );
    expect(skipped.map((r) => r.offset)).toEqual([0n, 1n, 2n, 3n, 4n, 6n]);
  });

  it('should refuse a batch whose parts do not follow each other, naming the offset', async () => {
    const broker = await written('batch');
    const parts = broker.messages('target').map((m) => m.bytes);
    broker.append('target', [parts[0] as Uint8Array, parts[4] as Uint8Array]);
    const error = await collect(
      readResults(broker.source('target'), { from: 15n, untilCaughtUp: true }),
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotAResultError);
    expect(error).toMatchObject({ offset: 16n });
    expect(
      await collect(
        readResults(broker.source('target'), { from: 15n, untilCaughtUp: true, invalid: 'skip' }),
      ),
    ).toEqual([]);
  });

  it('should refuse bad options where they are given', () => {
    const source = brokerWithReadings([]).source('target');
    expect(() => readResults(source, { from: -1n })).toThrow(
      "from must be an offset (a bigint >= 0n), 'first' or 'next', given: -1n",
    );
    expect(() => readResults(source, { from: 3 as unknown as bigint })).toThrow(ConfigError);
    expect(() => readResults(source, { invalid: 'ignore' as 'skip' })).toThrow(
      "invalid must be 'error' or 'skip', given: 'ignore'",
    );
  });

  it("should type outputs with the job's result type", () => {
    type Job = ReturnType<typeof job>;
    expectTypeOf<ResultOf<Job>>().toEqualTypeOf<{ total: number }>();
    expectTypeOf(decodeResult<ResultOf<Job>>).returns.toEqualTypeOf<
      DecodedResult<{ total: number }>
    >();
    expectTypeOf(readResults<ResultOf<Job>>).returns.toEqualTypeOf<
      AsyncGenerator<ReadResult<{ total: number }>, void, undefined>
    >();
  });

  it("should say where to read on without missing another producer's step still open", async () => {
    const broker = new MemoryBroker({ now: () => T0 });
    broker.createStream('target');
    const step = (producer: string, lastOffset: bigint, keys: number) => ({
      firstOffset: lastOffset,
      lastOffset,
      messages: keys,
      window: { start: T0, end: T0 + 60_000 },
      outputs: Array.from({ length: keys }, (_, i) => ({ key: `k${i}`, count: 1, value: i })),
      late: [],
      lateDropped: 0,
      filtered: 0,
      deadLetters: [],
    });
    const metadata = (producer: string) => ({ source: 'source', producer, window: 'tumbling(1m)' });
    // p's step takes several writes; q's whole step is stored after p's first.
    const [first, ...rest] = encodeStep(
      step('p', 9n, 40),
      metadata('p'),
      'single',
      'msgpack',
      1_024,
      0n,
    );
    const [q] = encodeStep(step('q', 9n, 1), metadata('q'), 'single', 'msgpack', 1_024, 0n);
    for (const write of [first, q, ...rest]) broker.append('target', write ?? []);
    const end = BigInt(2 + rest.length);
    expect(rest.length).toBeGreaterThan(0);
    const read = await collect(readResults(broker.source('target'), { untilCaughtUp: true }));
    expect(read.map((r) => [r.result.producer, r.offset, r.next, r.resumeFrom])).toEqual([
      // q's step is whole first, while p's begun at 0 is not: reading on from 2 would lose it.
      ['q', 1n, 2n, 0n],
      ['p', 0n, end, end],
    ]);
  });
});
