// The consume side at the edges of a stream: what a reader is delivered when the last chunk
// is a tracking chunk, when retention removed offsets it needs, when it is aborted while
// connecting, and when the broker stays away.
import { randomUUID } from 'node:crypto';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { aggregate, isRetriable, jsonMessage, SourceError } from '../../src/index.js';
import { connect, parseStreamUrl, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { RetentionGapError } from '../../src/index.js';
import { silentLogger } from '../../src/rabbitmq/silent-logger.js';
import { streamStats } from '../../src/rabbitmq/stream-stats.js';
import { publishAll, readAll, uniqueStream } from '../support/rabbitmq.js';

const url = inject('rabbitmqUrl');
let rabbit: RabbitMQ;
const streams: string[] = [];

beforeAll(async () => {
  rabbit = await connect(url);
});
afterAll(async () => {
  for (const stream of streams) await rabbit.deleteStream(stream);
  await rabbit.close();
});

async function newStream(options: Parameters<RabbitMQ['createStream']>[1] = {}): Promise<string> {
  const stream = uniqueStream('edges');
  await rabbit.createStream(stream, options);
  streams.push(stream);
  return stream;
}

const readings = (n: number) =>
  Array.from({ length: n }, (_, i) => jsonMessage({ i }, { creationTime: 1_000 * i }));

describe('the RabbitMQ source at the edges of a stream', () => {
  it('should end at the last user chunk when a tracking chunk from store_offset comes after it', async () => {
    const stream = await newStream();
    await publishAll(rabbit, stream, readings(3));
    const tracker = await Connection.connect(
      { ...parseStreamUrl(url), connectionId: randomUUID() },
      silentLogger,
    );
    await tracker.storeOffset({ reference: 'some-consumer', stream, offsetValue: 2n });
    await tracker.close({ closingCode: 0, closingReason: '', manuallyClose: true });

    const source = rabbit.source(stream, { timeoutMs: 1_000 });
    expect(await source.endOffset()).toBe(3n); // the tracking chunk at offset 3 is never delivered
    const target = await newStream();
    const summary = await aggregate<{ i: number }>(source)
      .count(1)
      .reduce((a, b) => ({ i: a.i + b.i }))
      .to(rabbit.target(target, { producer: 'edges' }))
      .run({ untilCaughtUp: true });
    expect(summary.results).toBe(3);
  });

  it('should refuse to read offsets that retention removed, and let a new job start after them', async () => {
    const stream = await newStream({ maxLengthBytes: 3_000, maxSegmentSizeBytes: 1_000 });
    // Retention runs when a segment is full; publish enough to roll several.
    for (let round = 0; round < 4; round++) await publishAll(rabbit, stream, readings(50));
    const source = rabbit.source(stream);
    expect((await streamStats(parseStreamUrl(url), stream)).firstChunkId).toBeGreaterThan(0n);

    const reading = (async () => {
      for await (const chunk of source.read(0n, new AbortController().signal)) return chunk;
    })();
    await expect(reading).rejects.toThrow(RetentionGapError);
    await expect(reading).rejects.toThrow(
      /offsets 0\.\.\d+ were removed by the stream's retention/,
    );
    await expect(reading).rejects.toSatisfy((error) => !isRetriable(error));

    // A job that never published starts at the first offset still stored.
    const target = await newStream();
    await aggregate<{ i: number }>(source)
      .count(1)
      .reduce((a) => a)
      .to(rabbit.target(target, { producer: 'after-retention' }))
      .run({ untilCaughtUp: true });
    const [firstResult] = await readAll(rabbit, target);
    expect(firstResult).toBeDefined();
  });

  it('should end a read that is aborted while it connects', async () => {
    const stream = await newStream();
    const controller = new AbortController();
    const next = rabbit.source(stream).read(0n, controller.signal)[Symbol.asyncIterator]().next();
    setTimeout(() => controller.abort(), 5);
    await expect(next).resolves.toMatchObject({ done: true });
  });

  it('should report a broker that stays away as a retriable SourceError naming the stream', async () => {
    const unreachable = { ...parseStreamUrl(url), port: 1 };
    const { rabbitSource } = await import('../../src/rabbitmq/index.js');
    const source = rabbitSource('nowhere', {
      connection: unreachable,
      reconnect: { attempts: 2, initialDelayMs: 1 },
      timeoutMs: 1_000,
    });
    const reading = source.read(0n, new AbortController().signal)[Symbol.asyncIterator]().next();
    await expect(reading).rejects.toThrow(SourceError);
    await expect(reading).rejects.toThrow(
      /reading stream 'nowhere' at offset 0 failed: no connection after 2 attempts/,
    );
    await expect(reading).rejects.toSatisfy(isRetriable);
    await expect(source.endOffset()).rejects.toSatisfy(isRetriable);
  });
});
