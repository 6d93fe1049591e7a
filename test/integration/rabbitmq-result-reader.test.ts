// readResults over RabbitMQ's source: a job's target read back as whole results.
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  jsonMessage,
  NotAResultError,
  readResults,
  type PackMode,
  type ReadResult,
  type ReadResultsOptions,
  type Source,
  type Target,
} from '../../src/index.js';
import { brokerWithReadings, reading, type Reading } from '../support/jobs/memory-job.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';

const real = rabbitForTests();

/** Six one-minute windows of keys a, b, c: five results of three outputs each. */
const readings = Array.from({ length: 18 }, (_, i) => reading('abc'[i % 3] as string, i, 20 * i));

const job = (source: Source, target: Target, pack: PackMode) =>
  aggregate<Reading>(source)
    .tumbling('1m')
    .key((r) => r.sensor)
    .reduce((total, r) => total + r.value, 0)
    .to(target, { pack, retryDelayMs: 0 });

/** A result as read with its source stream's name, which differs between brokers, as 'in'. */
const sourceIn = (read: ReadResult<number>) => ({
  ...read,
  result: {
    ...read.result,
    source: 'in',
    definition: read.result.definition?.replace(/"source":"[^"]*"/, '"source":"in"'),
  },
});

/** A source stream of `readings` and the target a job wrote from it, on RabbitMQ. */
async function jobOnRabbit(pack: PackMode): Promise<{ source: string; target: string }> {
  const from = await real.newStream('reader-in');
  const to = await real.newStream('reader-out');
  await publishAll(
    real.rabbit,
    from,
    readings.map((r) => jsonMessage(r, { creationTime: r.t })),
  );
  const target = real.rabbit.target(to, { producer: 'job' });
  await job(real.rabbit.source(from), target, pack).run({ untilCaughtUp: true });
  await target.close();
  return { source: from, target: to };
}

/** The target of `jobOnRabbit`. */
async function targetOnRabbit(pack: PackMode): Promise<string> {
  return (await jobOnRabbit(pack)).target;
}

async function collect(source: Source, options: ReadResultsOptions): Promise<ReadResult<number>[]> {
  const all: ReadResult<number>[] = [];
  for await (const item of readResults<number>(source, options)) all.push(item);
  return all;
}

describe('readResults on RabbitMQ', () => {
  it('should reassemble every batch at its real offsets and stop when caught up', async () => {
    const stream = await targetOnRabbit('batch');
    const read = await collect(real.rabbit.source(stream), { untilCaughtUp: true });
    expect(read.map((r) => [r.offset, r.next, r.result.lastOffset])).toEqual([
      [0n, 3n, 2n],
      [3n, 6n, 5n],
      [6n, 9n, 8n],
      [9n, 12n, 11n],
      [12n, 15n, 14n],
    ]);
    expect(read.map((r) => r.result.outputs.map((o) => o.value))).toEqual(
      [0, 1, 2, 3, 4].map((w) => [3 * w, 3 * w + 1, 3 * w + 2]),
    );
  });

  it('should read the same results as from the embedded broker, in every packing', async () => {
    for (const pack of ['sections', 'batch', 'single'] as const) {
      const broker = brokerWithReadings(readings);
      await job(broker.source('source'), broker.target('target', { producer: 'job' }), pack).run({
        untilCaughtUp: true,
      });
      const memory = await collect(broker.source('target'), { untilCaughtUp: true });
      const rabbitRead = await collect(real.rabbit.source(await targetOnRabbit(pack)), {
        untilCaughtUp: true,
      });
      expect(rabbitRead.map(sourceIn)).toEqual(memory.map(sourceIn));
    }
  });

  it('should start from an offset in the middle of a batch at the next whole result', async () => {
    const stream = await targetOnRabbit('batch');
    expect(
      (await collect(real.rabbit.source(stream), { from: 7n, untilCaughtUp: true })).map(
        (r) => r.offset,
      ),
    ).toEqual([9n, 12n]);
    expect(
      (await collect(real.rabbit.source(stream), { from: 6n, untilCaughtUp: true })).map(
        (r) => r.offset,
      ),
    ).toEqual([6n, 9n, 12n]);
  });

  it('should stop at the end offset taken at the start while more is written during the read', async () => {
    const stream = await targetOnRabbit('sections');
    const writer = real.rabbit.target(stream, { producer: 'more' });
    const read: bigint[] = [];
    for await (const { offset } of readResults(real.rabbit.source(stream), {
      untilCaughtUp: true,
    })) {
      read.push(offset);
      if (offset === 0n) {
        const copy = await collect(real.rabbit.source(stream), { untilCaughtUp: true });
        expect(copy).toHaveLength(5);
        await writer.publish(1n, [jsonMessage({ written: 'during the read' })]);
      }
    }
    await writer.close();
    expect(read).toEqual([0n, 1n, 2n, 3n, 4n]);
  });

  it("should deliver what is written after the start with from 'next', and end cleanly on abort", async () => {
    const { source, target: stream } = await jobOnRabbit('batch');
    const controller = new AbortController();
    const iterator = readResults<number>(real.rabbit.source(stream), {
      from: 'next',
      signal: controller.signal,
    });
    const first = iterator.next();
    // The job run again over its source, two readings longer, publishes the next window's
    // result.
    const more = [reading('a', 100, 400), reading('b', 200, 401)];
    await publishAll(
      real.rabbit,
      source,
      more.map((r) => jsonMessage(r, { creationTime: r.t })),
    );
    const target = real.rabbit.target(stream, { producer: 'job' });
    await job(real.rabbit.source(source), target, 'batch').run({ untilCaughtUp: true });
    await target.close();

    const result = await first;
    expect(result.done).toBe(false);
    expect(result.value?.offset).toBe(15n);
    expect(result.value?.result.outputs.map((o) => o.value)).toEqual([15, 16, 17]);
    const waiting = iterator.next();
    controller.abort();
    expect(await waiting).toEqual({ done: true, value: undefined });
  });

  it('should name the stream and offset of a message that is not a result', async () => {
    const stream = await targetOnRabbit('sections');
    await publishAll(real.rabbit, stream, [jsonMessage({ not: 'a result' })]);
    const error = await collect(real.rabbit.source(stream), { untilCaughtUp: true }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(NotAResultError);
    expect(error).toMatchObject({ stream, offset: 5n });
  });
});
