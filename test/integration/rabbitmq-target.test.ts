import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { DeclarePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/declare_publisher_request.js';
import { DeletePublisherRequest } from 'rabbitmq-stream-js-client/dist/requests/delete_publisher_request.js';
import type { PublishErrorResponse } from 'rabbitmq-stream-js-client/dist/responses/publish_error_response.js';
import type { SourceChunk } from '../../src/ports/ports.js';
import { PublishError, ResumePointError } from '../../src/common/errors.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { PublishRouter, type PublisherEvents } from '../../src/rabbitmq/gaps/publish-confirms.js';
import { FrameAssembler } from '../../src/rabbitmq/socket-frames.js';
import { publishFrame, sendFrame } from '../../src/rabbitmq/gaps/raw-publish.js';
import { silentLogger } from '../../src/common/logger.js';
import { messagesOf, offsetsOf, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { stockForTests } from '../support/clients/stock-client.js';

const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);

const real = rabbitForTests();
const stock = stockForTests();

describe('the RabbitMQ target', () => {
  it('stores a message with three data sections byte for byte, which the stock consumer reads as one section', async () => {
    const stream = await newStream();
    const message = amqpMessage('first', 'second', 'third');
    const target = real.rabbit.target(stream, { producer: 'p' });

    await target.publish(1n, [message]);

    expect(await readMessages(stream, 1)).toEqual([message]);
    // The stock decoder keeps only the last data section (src/rabbitmq/read/source.ts reads all).
    expect(await stock.consume(stream, 1)).toEqual(['third']);
  });

  it('confirms a repeated or lower publishing id without storing it, and keeps the last id', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'dedup' });

    await target.publish(5n, [amqpMessage('five')]);
    await target.publish(5n, [amqpMessage('five again')]);
    await target.publish(3n, [amqpMessage('three')]);

    expect(await target.lastPublishingId()).toBe(5n);
    expect(await real.rabbit.source(stream).endOffset()).toBe(1n);
  });

  it('publishes id 0 as 0, and a second id 0 is discarded', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'zero' });

    await target.publish(0n, [amqpMessage('zero')]);
    await target.publish(0n, [amqpMessage('zero again')]);
    await target.publish(1n, [amqpMessage('one')]);

    expect(await target.lastPublishingId()).toBe(1n);
    expect(await readMessages(stream, 2)).toEqual([amqpMessage('zero'), amqpMessage('one')]);
  });

  it('stores a sub-entry batch under one id as one message per entry, and discards a repeat', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'batch' });
    const batch = [amqpMessage('a'), amqpMessage('b', 'b2'), amqpMessage('c')];

    await target.publish(10n, batch);
    await target.publish(10n, [amqpMessage('x'), amqpMessage('y')]);
    await target.publish(11n, [amqpMessage('d')]);

    expect(await target.lastPublishingId()).toBe(11n);
    const chunks = await readChunks(stream, 4);
    expect(messagesOf(chunks)).toEqual([...batch, amqpMessage('d')]);
    expect(offsetsOf(chunks)).toEqual([0n, 1n, 2n, 3n]);
  });

  it('stores a gzip-compressed sub-entry batch whole', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'gzip', compression: 'gzip' });
    const batch = [amqpMessage('a'.repeat(500)), amqpMessage('b'.repeat(500))];

    await target.publish(1n, batch);

    expect(await readMessages(stream, 2)).toEqual(batch);
  });

  it('routes confirms and errors to their own publisher when two share a connection', async () => {
    const live = await newStream();
    const doomed = await newStream();
    const good = real.rabbit.target(live, { producer: 'same-name' });
    const bad = real.rabbit.target(doomed, { producer: 'same-name' });
    await bad.publish(1n, [amqpMessage('before')]);
    await real.rabbit.deleteStream(doomed);

    const results = await Promise.allSettled([
      bad.publish(2n, [amqpMessage('lost')]),
      good.publish(2n, [amqpMessage('kept')]),
    ]);

    // Refused (the broker dropped the publisher) or fenced; the resume point tells it is final.
    expect(results[0]).toMatchObject({ status: 'rejected', reason: { name: 'PublishError' } });
    await expect(bad.lastPublishingId()).rejects.toMatchObject({
      responseCode: 0x02,
      retriable: false,
    });
    expect(results[1].status).toBe('fulfilled');
    expect(await good.lastPublishingId()).toBe(2n);
  });

  it('refuses publishing to a deleted stream, and its resume point fails with a non-retriable code 2', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'deleted' });
    await target.publish(1n, [amqpMessage('one')]);

    await real.rabbit.deleteStream(stream);
    const error = await target.publish(2n, [amqpMessage('two')]).catch((e: unknown) => e);
    const resume = await target.lastPublishingId().catch((e: unknown) => e);

    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ stream, publishingId: 2n });
    expect(resume).toBeInstanceOf(ResumePointError);
    expect(resume).toMatchObject({
      retriable: false,
      responseCode: 0x02,
      stream,
      producer: 'deleted',
    });
  });

  it('fails the resume point of a stream that never existed with a non-retriable code 2', async () => {
    const target = real.rabbit.target(`never-created-${randomUUID()}`, { producer: 'nobody' });

    await expect(target.lastPublishingId()).rejects.toMatchObject({
      name: 'ResumePointError',
      responseCode: 0x02,
      retriable: false,
    });
  });

  it('keeps at most maxInFlight publishes open and still confirms all of them', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'bounded', maxInFlight: 2 });

    await Promise.all(
      Array.from({ length: 50 }, (_, i) => target.publish(BigInt(i + 1), [amqpMessage(`m${i}`)])),
    );

    expect(await target.lastPublishingId()).toBe(50n);
    expect(await real.rabbit.source(stream).endOffset()).toBe(50n);
  });

  it('accepts a message of maxWriteBytes and refuses a larger one before sending it', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'big' });
    const largest = new Uint8Array(target.maxWriteBytes).fill(7);
    const tooLarge = new Uint8Array(target.maxWriteBytes + 1);

    await target.publish(1n, [largest]);
    const error = await target.publish(2n, [tooLarge]).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'PublishError', retriable: false });
    expect(await target.lastPublishingId()).toBe(1n);
  });

  it('refuses a gzip batch larger than maxWriteBytes uncompressed, though it compresses to fit', async () => {
    // RabbitMQ 4.3.5+ refuses one batch whose declared uncompressed size is over its
    // max_uncompressed_sub_entry_batch_size while storing the frames after it: a gap. Bounded
    // by frame_max, no batch of ours can be refused that way (see the README).
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'gzip-big', compression: 'gzip' });
    const half = new Uint8Array(Math.ceil(target.maxWriteBytes / 2)).fill(1);

    const error = await target.publish(1n, [half, half]).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'PublishError', retriable: false, publishingId: 1n });
    expect(await target.lastPublishingId()).toBe(0n);
  });

  it('rejects in-flight publishes as retriable when the connection drops, then publishes again', async () => {
    const stream = await newStream();
    const target = real.rabbit.target(stream, { producer: 'reconnect' });
    await target.publish(1n, [amqpMessage('one')]);

    const inFlight = target.publish(2n, [amqpMessage('two')]);
    real.rabbit.dropConnectionForTesting();
    const error = await inFlight.catch((e: unknown) => e);
    // The frame may have reached the broker before the drop: the retry below is then discarded.
    if (error !== undefined) expect(error).toMatchObject({ name: 'PublishError', retriable: true });

    const resumeFrom = await target.lastPublishingId();
    await target.publish(2n, [amqpMessage('two')]);
    await target.publish(3n, [amqpMessage('three')]);

    expect(resumeFrom === 1n || resumeFrom === 2n).toBe(true);
    expect(await target.lastPublishingId()).toBe(3n);
    expect(await readMessages(stream, 3)).toEqual(
      ['one', 'two', 'three'].map((s) => amqpMessage(s)),
    );
  });
});

describe('the broker, on what the fence relies on (README, "How the guarantee works")', () => {
  it('refuses every write already sent to a removed publisher until it is declared again, then stores the next', async () => {
    const stream = await newStream();
    const connection = await Connection.connect(
      { ...params, connectionId: randomUUID() },
      silentLogger,
    );
    const refused: bigint[] = [];
    routerFor(connection).register(
      3,
      publisherEvents(stream, { failed: (id) => refused.push(id) }),
    );
    const declare = () =>
      connection.sendAndWait(
        new DeclarePublisherRequest({ stream, publisherId: 3, publisherRef: 'order' }),
      );
    const write = (id: bigint) =>
      sendFrame(connection, publishFrame(3, id, [amqpMessage(`${id}`)]));
    await declare();

    // All on the wire before any answer: the broker handles them in this order.
    const sent = [
      write(1n),
      connection.sendAndWait(new DeletePublisherRequest(3)),
      write(2n),
      write(3n),
      write(4n),
      declare(),
      write(5n),
    ];
    await Promise.all(sent);
    await waitFor(() => Promise.resolve(refused.length >= 3));

    expect(refused).toEqual([2n, 3n, 4n]);
    expect(await readMessages(stream, 2)).toEqual([amqpMessage('1'), amqpMessage('5')]);
    await connection.close();
  });
});

describe('the stock publisher of rabbitmq-stream-js-client 1.0.0 (gaps worked around in src/rabbitmq/gaps)', () => {
  it('re-encodes an already-encoded message into a new one instead of publishing its bytes (raw-publish.ts)', async () => {
    const stream = await newStream();
    const message = amqpMessage('first', 'second');
    const publisher = await stock.client.declarePublisher({ stream });

    await publisher.send(message);
    await publisher.flush();

    const [stored] = await readMessages(stream, 1);
    expect(stored).not.toEqual(message);
    await publisher.close();
  });

  it('publishes send(…, { publishingId: 0n }) under its counter instead of 0 (raw-publish.ts)', async () => {
    const stream = await newStream();
    const publisher = await stock.client.declarePublisher({ stream, publisherRef: 'zero' });

    await publisher.send(Buffer.from('zero'), { publishingId: 0n });
    await publisher.flush();
    await real.rabbit.source(stream).endOffset(); // the confirm may lag; wait until stored
    await waitFor(async () => (await publisher.getLastPublishingId()) !== 0n);

    expect(await publisher.getLastPublishingId()).toBe(1n);
    await publisher.close();
  });

  it('sends sub-entries under its unchanged counter, so dedup silently discards them (raw-publish.ts)', async () => {
    const stream = await newStream();
    const publisher = await stock.client.declarePublisher({ stream, publisherRef: 'batch' });
    await publisher.send(Buffer.from('one'));
    await publisher.flush();
    await waitFor(async () => (await publisher.getLastPublishingId()) === 1n);

    // The counter is 1, already stored: the batch goes out under 1 and is discarded.
    await publisher.sendSubEntries([{ content: Buffer.from('a') }, { content: Buffer.from('b') }]);
    await publisher.send(Buffer.from('two'));
    await publisher.flush();
    await waitFor(async () => (await publisher.getLastPublishingId()) === 2n);

    expect(await real.rabbit.source(stream).endOffset()).toBe(2n);
    await publisher.close();
  });

  it('hands every publisher on a connection the confirms of the others (publish-confirms.ts)', async () => {
    const stream = await newStream();
    const first = await stock.client.declarePublisher({ stream, publisherRef: 'first' });
    const second = await stock.client.declarePublisher({ stream, publisherRef: 'second' });
    const heardByFirst: bigint[] = [];
    first.on('publish_confirm', (_error, ids) => heardByFirst.push(...ids));

    await second.send(Buffer.from('only the second publishes'));
    await second.flush();
    await waitFor(() => Promise.resolve(heardByFirst.length > 0));

    expect(first.getConnectionInfo().id).toBe(second.getConnectionInfo().id);
    expect(heardByFirst).toEqual([1n]);
    await first.close();
    await second.close();
  });

  it('mis-parses publish errors, which our router reads right (publish-errors.ts)', async () => {
    await newStream();
    const stockConnection = await Connection.connect(
      { ...params, connectionId: randomUUID() },
      silentLogger,
    );
    const ours = await Connection.connect({ ...params, connectionId: randomUUID() }, silentLogger);
    const event = new Promise<PublishErrorResponse>((resolve) =>
      stockConnection.on('publish_error', resolve),
    );
    const refused = new Promise<[bigint, number]>((resolve) =>
      routerFor(ours).register(
        200,
        publisherEvents('none', { failed: (id, code) => resolve([id, code]) }),
      ),
    );

    // Publisher 200 was never declared: the broker answers with "publisher does not exist".
    await sendFrame(stockConnection, publishFrame(200, 42n, [amqpMessage('nobody')]));
    await sendFrame(ours, publishFrame(200, 42n, [amqpMessage('nobody')]));
    const error = await event;

    expect(error.publisherId).toBeUndefined();
    expect(error.publishingError.publishingId).toBeUndefined();
    expect(await refused).toEqual([42n, 0x12]);
    await stockConnection.close();
    await ours.close();
  });

  it('reads every confirm through received(), which formats it for a debug line; our router takes it before (publish-confirms.ts)', async () => {
    const stream = await newStream();
    const confirmsSeenByClient = async (route: boolean): Promise<number> => {
      const connection = await Connection.connect(
        { ...params, connectionId: randomUUID() },
        silentLogger,
      );
      const keys = keysReadBy(connection);
      const confirmed = new Promise<readonly bigint[]>((resolve) => {
        if (route) {
          routerFor(connection).register(4, publisherEvents(stream, { confirmed: resolve }));
        } else {
          connection.on('publish_confirm', (event: { publishingIds: bigint[] }) =>
            resolve(event.publishingIds),
          );
        }
      });
      await connection.sendAndWait(
        new DeclarePublisherRequest({ stream, publisherId: 4, publisherRef: `${route}` }),
      );

      await sendFrame(connection, publishFrame(4, 1n, [amqpMessage('one')]));

      expect(await confirmed).toEqual([1n]);
      await connection.close();
      return keys.filter((key) => key === 0x0003).length;
    };

    expect(await confirmsSeenByClient(false)).toBe(1);
    expect(await confirmsSeenByClient(true)).toBe(0);
  });
});

/** A router on `connection` whose read errors fail the test. */
function routerFor(connection: Connection): PublishRouter {
  return new PublishRouter(connection, (error) => {
    throw error;
  });
}

function publisherEvents(stream: string, events: Partial<PublisherEvents>): PublisherEvents {
  return {
    stream,
    confirmed: () => undefined,
    failed: () => undefined,
    streamChanged: () => undefined,
    ...events,
  };
}

/** The keys of the frames the client's `received()` is handed from now on, in order. */
function keysReadBy(connection: Connection): number[] {
  const keys: number[] = [];
  const frames = new FrameAssembler((frame) => keys.push(frame.readUInt16BE(4)));
  const client = connection as unknown as { received(data: Buffer): void };
  const received = client.received.bind(connection);
  client.received = (data) => {
    frames.push(data);
    received(data);
  };
  return keys;
}

const newStream = () => real.newStream('target-test');

/** An AMQP 1.0 bare message with one `data` section per argument. */
function amqpMessage(...sections: string[]): Buffer {
  return Buffer.concat(
    sections.map((text) => {
      const bytes = Buffer.from(text);
      const header = Buffer.from([0x00, 0x53, 0x75, 0xb0, 0, 0, 0, 0]);
      header.writeUInt32BE(bytes.length, 4);
      return Buffer.concat([header, bytes]);
    }),
  );
}

async function readChunks(stream: string, messages: number): Promise<SourceChunk[]> {
  const abort = new AbortController();
  const chunks: SourceChunk[] = [];
  let seen = 0;
  for await (const chunk of real.rabbit.source(stream).read(0n, abort.signal)) {
    chunks.push(chunk);
    seen += chunk.count;
    if (seen >= messages) break;
  }
  abort.abort();
  return chunks;
}

async function readMessages(stream: string, messages: number): Promise<Buffer[]> {
  return messagesOf(await readChunks(stream, messages));
}

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
