import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { connect, Offset, type Client, type ClientParams } from 'rabbitmq-stream-js-client';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import type { SourceChunk } from '../../src/ports/ports.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { rabbitSource } from '../../src/rabbitmq/read/source.js';
import { silentLogger } from '../../src/common/logger.js';
import { messagesOf, offsetsOf } from '../support/brokers/rabbitmq.js';
import { bound } from '../support/timing.js';

// Against the real broker: RABBITMQ_STREAM_URL, or the one scripts/rabbitmq.sh announced.
const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);

let client: Client;
const streams: string[] = [];

beforeAll(async () => {
  client = await connect(params);
});

afterAll(async () => {
  for (const stream of streams) await client.deleteStream({ stream });
  await client.close();
});

describe('the stock consumer of rabbitmq-stream-js-client 1.0.0 (gaps worked around in src/rabbitmq/gaps/consume-raw-chunks.ts)', () => {
  it('keeps only the last of three data sections, where our source reads the message whole', async () => {
    const stream = await newStream();
    const message = amqpMessage('first', 'second', 'third');
    await publishRaw(stream, [{ message }]);

    const stock = await consumeStock(stream, 1);
    expect(stock.map((m) => m.content)).toEqual(['third']);

    expect(messagesOf(await readChunks(stream, 0n, 1))).toEqual([message]);
  });

  it('numbers sub-entry batch messages 0..n-1, where our source gives their real offsets', async () => {
    const stream = await newStream();
    await publishRaw(stream, [{ message: amqpMessage('a') }, { message: amqpMessage('b') }]);
    const batch = [amqpMessage('x1'), amqpMessage('x2'), amqpMessage('x3')];
    await publishRaw(stream, [{ batch }]);

    const stock = await consumeStock(stream, 5);
    expect(stock.map((m) => m.offset)).toEqual([0n, 1n, 0n, 1n, 2n]);

    const chunks = await readChunks(stream, 0n, 5);
    expect(offsetsOf(chunks)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(messagesOf(chunks).slice(2)).toEqual(batch);
  });
});

describe('rabbitSource', () => {
  it('reads a gzip sub-entry batch decompressed, each message at its own offset', async () => {
    const stream = await newStream();
    await publishRaw(stream, [{ message: amqpMessage('plain') }]);
    const batch = [amqpMessage('g1'), amqpMessage('g2'), amqpMessage('g3')];
    await publishRaw(stream, [{ batch, gzip: true }]);

    const chunks = await readChunks(stream, 0n, 4);
    expect(offsetsOf(chunks)).toEqual([0n, 1n, 2n, 3n]);
    expect(messagesOf(chunks).slice(1)).toEqual(batch);
  });

  it('starts in the middle of a chunk without the messages before the requested offset', async () => {
    const stream = await newStream();
    const messages = Array.from({ length: 10 }, (_, i) => amqpMessage(`m${i}`));
    // One sub-entry batch is one entry, so the broker cannot split it across chunks (a
    // Publish frame of ten plain entries may land in several chunks under load).
    await publishRaw(stream, [{ batch: messages }]);

    const [whole] = await readChunks(stream, 0n, 10);
    expect(whole?.count).toBe(10);

    const chunks = await readChunks(stream, 7n, 3);
    expect(chunks[0]?.firstOffset).toBe(7n);
    expect(messagesOf(chunks)).toEqual(messages.slice(7));
  });

  it('exposes the chunk timestamp, the same when the chunk is read again', async () => {
    const stream = await newStream();
    const before = Date.now();
    await publishRaw(stream, [{ message: amqpMessage('t') }]);
    const after = Date.now();

    const [first] = await readChunks(stream, 0n, 1);
    const [again] = await readChunks(stream, 0n, 1);
    // Broker and test share this machine's clock; allow for its millisecond rounding.
    expect(first?.timestamp).toBeGreaterThanOrEqual(before - 1_000);
    expect(first?.timestamp).toBeLessThanOrEqual(after + 1_000);
    expect(again?.timestamp).toBe(first?.timestamp);
  });

  it('reports the end offset of an empty stream as 0 and one past the last message after publishing', async () => {
    const stream = await newStream();
    const source = rabbitSource(stream, { connection: params });
    expect(await source.endOffset()).toBe(0n);

    await publishRaw(stream, [{ message: amqpMessage('a') }, { message: amqpMessage('b') }]);
    await publishRaw(stream, [{ batch: [amqpMessage('c'), amqpMessage('d'), amqpMessage('e')] }]);
    expect(await source.endOffset()).toBe(5n);
  });

  it('resumes at the next undelivered offset after the connection is cut', async () => {
    const stream = await newStream();
    const total = 2_000;
    await publishMany(stream, total, 100);
    const proxy = await startProxy(params);
    const source = rabbitSource(stream, {
      connection: { ...params, hostname: '127.0.0.1', port: proxy.port },
      credit: 1,
      reconnect: { initialDelayMs: 10 },
    });
    const abort = new AbortController();
    const offsets: bigint[] = [];
    let cuts = 0;
    for await (const chunk of source.read(0n, abort.signal)) {
      for (let i = 0; i < chunk.count; i++) offsets.push(chunk.firstOffset + BigInt(i));
      // Cut after each of the first chunks: the broker batches pipelined publishes into chunks
      // of up to several hundred messages, so cutting at fixed counts could run out of chunks.
      if (cuts < 3 && offsets.length < total) {
        cuts++;
        proxy.cutAll();
      }
      if (offsets.length >= total) abort.abort();
    }
    await proxy.close();
    expect(cuts).toBe(3);
    expect(offsets).toEqual(Array.from({ length: total }, (_, i) => BigInt(i)));
  });

  it('stops reading when the signal aborts', async () => {
    const stream = await newStream();
    await publishRaw(stream, [{ message: amqpMessage('only') }]);
    const abort = new AbortController();
    const chunks: SourceChunk[] = [];
    setTimeout(() => abort.abort(), 300);
    for await (const chunk of rabbitSource(stream, { connection: params }).read(0n, abort.signal)) {
      chunks.push(chunk);
    }
    expect(offsetsOf(chunks)).toEqual([0n]);
  });

  it('lets one single active consumer of a group read and hands over at the offset the next one asks for', async () => {
    const stream = await newStream();
    await publishRaw(
      stream,
      Array.from({ length: 10 }, (_, i) => ({ message: amqpMessage(`m${i}`) })),
    );
    const group = { name: `group-${stream}` };
    const first = new AbortController();
    const firstChunks: SourceChunk[] = [];
    const firstReading = (async () => {
      const source = rabbitSource(stream, { connection: params, singleActive: group });
      for await (const chunk of source.read(0n, first.signal)) firstChunks.push(chunk);
    })();
    // The ten messages may come in several chunks (the broker cuts them as they arrive under
    // load): wait for all of them, not for the first chunk.
    await vi.waitFor(() => expect(offsetsOf(firstChunks)).toHaveLength(10), {
      timeout: bound(10_000),
      interval: 20,
    });

    const second = new AbortController();
    const secondChunks: SourceChunk[] = [];
    let asked = 0;
    const secondReading = (async () => {
      const source = rabbitSource(stream, { connection: params, singleActive: group });
      const resumePoint = (): Promise<bigint> => {
        asked++;
        return Promise.resolve(6n);
      };
      for await (const chunk of source.read(resumePoint, second.signal)) {
        secondChunks.push(chunk);
        if (offsetsOf(secondChunks).at(-1) === 9n) second.abort();
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(secondChunks).toEqual([]); // standing by while the first one is active

    first.abort();
    await firstReading;
    await secondReading;
    expect(asked).toBe(1);
    expect(offsetsOf(firstChunks)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
    expect(offsetsOf(secondChunks)).toEqual([6n, 7n, 8n, 9n]);
  });

  it('reads 100,000 small messages in order without a gap', async () => {
    const stream = await newStream();
    const total = 100_000;
    await publishMany(stream, total, 500);

    const started = performance.now();
    const offsets = new BigInt64Array(total);
    let n = 0;
    const abort = new AbortController();
    for await (const chunk of rabbitSource(stream, { connection: params }).read(0n, abort.signal)) {
      for (let i = 0; i < chunk.count; i++) offsets[n++] = chunk.firstOffset + BigInt(i);
      if (n >= total) abort.abort();
    }
    const ours = total / ((performance.now() - started) / 1000);

    const stockStarted = performance.now();
    await consumeStock(stream, total);
    const stock = total / ((performance.now() - stockStarted) / 1000);
    console.log(
      `rabbitSource read ${total} messages at ${Math.round(ours)} msg/s; ` +
        `the stock consumer at ${Math.round(stock)} msg/s (ratio ${(ours / stock).toFixed(2)})`,
    );

    expect(n).toBe(total);
    for (let i = 0; i < total; i++)
      if (offsets[i] !== BigInt(i)) expect(offsets[i]).toBe(BigInt(i));
  });
});

// --- helpers -----------------------------------------------------------------------------

async function newStream(): Promise<string> {
  const stream = `rabbitmq-source-test-${process.pid}-${Date.now()}-${streams.length}`;
  await client.createStream({ stream });
  streams.push(stream);
  return stream;
}

/** An AMQP 1.0 bare message of `data` sections (descriptor 0x75, vbin8). */
function amqpMessage(...sections: string[]): Buffer {
  return Buffer.concat(
    sections.map((text) => {
      const body = Buffer.from(text);
      return Buffer.concat([Buffer.from([0x00, 0x53, 0x75, 0xa0, body.length]), body]);
    }),
  );
}

/** Reads chunks from `from` until they hold `messages` messages (the broker decides the chunking). */
async function readChunks(stream: string, from: bigint, messages: number): Promise<SourceChunk[]> {
  const abort = new AbortController();
  const chunks: SourceChunk[] = [];
  let read = 0;
  for await (const chunk of rabbitSource(stream, { connection: params }).read(from, abort.signal)) {
    chunks.push(chunk);
    read += chunk.count;
    if (read >= messages) abort.abort();
  }
  return chunks;
}

async function consumeStock(
  stream: string,
  count: number,
): Promise<{ offset: bigint | undefined; content: string }[]> {
  const received: { offset: bigint | undefined; content: string }[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, (message) => {
    received.push({ offset: message.offset, content: message.content.toString() });
    if (received.length === count) done();
  });
  await all;
  await consumer.close();
  return received;
}

type Entry = { message: Buffer } | { batch: Buffer[]; gzip?: boolean };

/**
 * Publishes raw frames (PROTOCOL.adoc "Publish"; sub-entries per osiris' SubBatchEntry) on
 * a client connection, independently of the adapter's publish side, so that a bug there
 * cannot hide one here. Each element of `frames` is one Publish frame. Resolves when every
 * entry is confirmed.
 */
async function publishFrames(stream: string, frames: readonly (readonly Entry[])[]): Promise<void> {
  let pending = frames.reduce((sum, entries) => sum + entries.length, 0);
  let confirmed: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (confirmed = resolve));
  const connection = await Connection.connect(
    {
      ...params,
      connectionId: `publish-${stream}`,
      listeners: {
        publish_confirm: (confirm) => {
          pending -= confirm.publishingIds.length;
          if (pending === 0) confirmed();
        },
      },
    },
    silentLogger,
  );
  await connection.sendAndWait(new DeclarePublisherRequest({ stream, publisherId: 0 }));
  let publishingId = 0n;
  for (const entries of frames) {
    const parts: Buffer[] = [];
    for (const entry of entries) {
      const id = Buffer.alloc(8);
      id.writeBigUInt64BE(++publishingId);
      parts.push(id);
      if ('message' in entry) {
        parts.push(uint32(entry.message.length), entry.message);
        continue;
      }
      const records = Buffer.concat(entry.batch.flatMap((m) => [uint32(m.length), m]));
      const body = entry.gzip === true ? gzipSync(records) : records;
      const header = Buffer.alloc(11);
      header[0] = 0x80 | ((entry.gzip === true ? 1 : 0) << 4);
      header.writeUInt16BE(entry.batch.length, 1);
      header.writeUInt32BE(records.length, 3);
      header.writeUInt32BE(body.length, 7);
      parts.push(header, body);
    }
    const content = Buffer.concat([Buffer.from([0]), uint32(entries.length), ...parts]);
    const frame = Buffer.concat([uint32(content.length + 4), Buffer.from([0, 2, 0, 1]), content]);
    await connection.send({ key: 2, version: 1, responseKey: -1, toBuffer: () => frame });
  }
  await all;
  await connection.close({ closingCode: 0, closingReason: '', manuallyClose: true });
}

function publishRaw(stream: string, entries: readonly Entry[]): Promise<void> {
  return publishFrames(stream, [entries]);
}

/** `total` messages of about 60 bytes, `perFrame` to a Publish frame (and so to a chunk). */
function publishMany(stream: string, total: number, perFrame: number): Promise<void> {
  const frames: Entry[][] = [];
  for (let from = 0; from < total; from += perFrame) {
    const entries: Entry[] = [];
    for (let i = from; i < Math.min(total, from + perFrame); i++) {
      entries.push({ message: amqpMessage(`{"sensor":"s${i % 10}","value":${i},"n":"......"}`) });
    }
    frames.push(entries);
  }
  return publishFrames(stream, frames);
}

function uint32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value);
  return b;
}

/** A TCP proxy to the broker whose connections the test can cut, as a network failure would. */
async function startProxy(
  target: ClientParams,
): Promise<{ port: number; cutAll: () => void; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((downstream) => {
    const upstream = tcpConnect(target.port, target.hostname);
    for (const [a, b] of [
      [downstream, upstream],
      [upstream, downstream],
    ] as const) {
      sockets.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        sockets.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    cutAll: () => sockets.forEach((s) => s.destroy()),
    close: async () => {
      sockets.forEach((s) => s.destroy());
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
