// What a consumer in another service sees of each packing (the README's interop table, its
// stock column; the AMQP columns are interop-clients.test.ts's):
// the stock rabbitmq-stream-js-client 1.0.0 consumer against the real broker, next to
// readResults. The results are a job's writes, placed in chunks the way a running job's
// pipelined publishes land: some alone, two sharing one chunk.
import { decode as decodeMsgpack } from '@msgpack/msgpack';
import { describe, expect, inject, it } from 'vitest';
import { Offset } from 'rabbitmq-stream-js-client';
import { readResults, type PackMode, type SingleFormat } from '../../src/index.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { INTEROP_CONTRACT } from '../support/clients/interop-contract.js';
import { jobWrites, LAST_OFFSETS } from '../support/results/job-writes.js';
import { chunkSizes, onRabbit } from '../support/results/job-chunks.js';
import { rabbitForTests } from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';
import type { Write } from '../support/results/shared-chunks.js';

const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);

const real = rabbitForTests();
const stock = stockForTests();

/**
 * The job's writes for a packing: five results of three outputs
 * (test/support/results/job-writes.ts).
 */
const writesOf = (pack: PackMode, format?: SingleFormat): Promise<Write[]> =>
  jobWrites({ pack, format });

interface StockMessage {
  readonly offset: bigint | undefined;
  readonly lastOffset: string | number | undefined;
  readonly part: string | number | undefined;
  readonly contentType: string | undefined;
  readonly holds: string | number | undefined;
  readonly content: Buffer;
}

/** What the stock consumer delivers, up to the last part of the job's last result. */
async function consumeStock(stream: string): Promise<StockMessage[]> {
  const received: StockMessage[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const consumer = await stock.client.declareConsumer(
    { stream, offset: Offset.first() },
    (message) => {
      const properties = message.applicationProperties ?? {};
      received.push({
        offset: message.offset,
        lastOffset: properties['sw-last-offset'],
        part: properties['sw-part'],
        contentType: message.messageProperties?.contentType,
        holds: properties['sw-holds'],
        content: message.content,
      });
      const last =
        properties['sw-parts'] === undefined ||
        Number(properties['sw-part']) === Number(properties['sw-parts']) - 1;
      // Delivered in order: once the last result's last part is here, nothing before it is still coming.
      if (properties['sw-last-offset'] === '14' && last) done();
    },
  );
  await all;
  await consumer.close();
  return received;
}

async function ourReader(stream: string) {
  const read = [];
  for await (const { offset, result } of readResults<number>(real.rabbit.source(stream), {
    untilCaughtUp: true,
  })) {
    read.push({
      offset,
      lastOffset: String(result.lastOffset),
      keys: result.outputs.map((o) => o.key),
    });
  }
  return read;
}

describe('the stock rabbitmq-stream-js-client 1.0.0 consumer and readResults on each packing', () => {
  it("should show the stock consumer only the last data section of a 'sections' result", async () => {
    const stream = await onRabbit(real, params, await writesOf('sections'));
    expect(await chunkSizes(real, stream)).toEqual([1, 1, 2, 1]);

    const seen = await consumeStock(stream);
    expect(seen).toHaveLength(INTEROP_CONTRACT.sections.stockMessages);
    expect(seen.map((m) => [m.offset, m.lastOffset])).toEqual(
      LAST_OFFSETS.map((o, i) => [BigInt(i), o]),
    );
    // Three outputs per result, of which the stock consumer keeps the last section only; the
    // message still says it is a sequence of sections, all outputs.
    expect(seen.map((m) => [m.contentType, m.holds])).toEqual(
      seen.map(() => ['application/msgpack-seq', 'output']),
    );
    expect(seen.map((m) => (decodeMsgpack(m.content) as { key: string }).key)).toEqual([
      'c',
      'c',
      'c',
      'c',
      'c',
    ]);

    expect(await ourReader(stream)).toEqual(
      LAST_OFFSETS.map((lastOffset, i) => ({
        offset: BigInt(i),
        lastOffset,
        keys: ['a', 'b', 'c'],
      })),
    );
  });

  it("should give the stock consumer offsets 0..n-1 in a 'batch' result and lose a batch sharing a chunk", async () => {
    const stream = await onRabbit(real, params, await writesOf('batch'));
    expect(await chunkSizes(real, stream)).toEqual([3, 3, 6, 3]);

    const seen = await consumeStock(stream);
    expect(seen).toHaveLength(INTEROP_CONTRACT.batch.stockMessages);
    // Real offsets 0..14; the stock consumer numbers each batch from 0, and of the chunk
    // holding the results for 8 and 11 it delivers the first batch only.
    expect(seen.map((m) => m.offset)).toEqual([0n, 1n, 2n, 0n, 1n, 2n, 0n, 1n, 2n, 0n, 1n, 2n]);
    expect(seen.map((m) => m.lastOffset)).toEqual(['2', '5', '8', '14'].flatMap((o) => [o, o, o]));
    expect(new Set(seen.map((m) => `${m.contentType} ${m.holds}`))).toEqual(
      new Set(['application/msgpack output']),
    );

    expect(await ourReader(stream)).toEqual(
      LAST_OFFSETS.map((lastOffset, i) => ({
        offset: BigInt(3 * i),
        lastOffset,
        keys: ['a', 'b', 'c'],
      })),
    );
  });

  it.each(['msgpack', 'json'] as const)(
    "should show the stock consumer each 'single' %s result whole in one message",
    async (format) => {
      const stream = await onRabbit(real, params, await writesOf('single', format));
      expect(await chunkSizes(real, stream)).toEqual([1, 1, 2, 1]);

      const seen = await consumeStock(stream);
      expect(seen).toHaveLength(
        INTEROP_CONTRACT[format === 'json' ? 'single json' : 'single msgpack'].stockMessages,
      );
      expect(seen.map((m) => [m.offset, m.lastOffset])).toEqual(
        LAST_OFFSETS.map((o, i) => [BigInt(i), o]),
      );
      expect(new Set(seen.map((m) => `${m.contentType} ${m.holds}`))).toEqual(
        new Set([`application/${format} output`]),
      );
      const parse = (content: Buffer) =>
        (format === 'json' ? JSON.parse(content.toString('utf8')) : decodeMsgpack(content)) as {
          key: string;
          value: number;
        }[];
      expect(seen.map((m) => parse(m.content).map((o) => o.key))).toEqual(
        LAST_OFFSETS.map(() => ['a', 'b', 'c']),
      );
      // The second minute holds readings 3, 4 and 5 of keys a, b and c.
      expect(parse(seen[1]?.content as Buffer).map((o) => o.value)).toEqual([3, 4, 5]);

      expect(await ourReader(stream)).toEqual(
        LAST_OFFSETS.map((lastOffset, i) => ({
          offset: BigInt(i),
          lastOffset,
          keys: ['a', 'b', 'c'],
        })),
      );
    },
  );
});
