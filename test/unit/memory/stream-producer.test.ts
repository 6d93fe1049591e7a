// The producer of the embedded broker: the same shape as `rabbit.producer`, for feeding a
// job's source in demos and users' tests.
import { describe, expect, it } from 'vitest';
import { aggregate, decodeResult, jsonMessage } from '../../../src/index.js';
import { decodeMessage } from '../../../src/codecs/amqp-message.js';
import { ConfigError, PublishError } from '../../../src/common/errors.js';
import { MemoryBroker, StreamNotFoundError } from '../../../src/memory/index.js';

/** Lets every pending confirm and write run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 1_000 });
  broker.createStream('in');
  return broker;
}

function bodies(broker: MemoryBroker): unknown[] {
  return broker.messages('in').map((m) => {
    const body = decodeMessage(m.bytes).body;
    if (body?.type !== 'data') throw new Error('not a data section');
    return JSON.parse(Buffer.from(body.sections[0] ?? []).toString('utf8')) as unknown;
  });
}

describe('broker.producer', () => {
  it('writes a value as a JSON message created now, and resolves with its publishing id', async () => {
    const broker = setup();
    const producer = broker.producer('in');
    await expect(producer.send({ n: 1 })).resolves.toBe(1n);
    await expect(producer.send({ n: 2 }, { creationTime: 5 })).resolves.toBe(2n);
    const [first, second] = broker.messages('in').map((m) => decodeMessage(m.bytes).properties);
    expect(first).toMatchObject({ contentType: 'application/json', creationTime: 1_000 });
    expect(second).toMatchObject({ creationTime: 5 });
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('writes an encoded message as it is', async () => {
    const broker = setup();
    const message = jsonMessage({ n: 3 }, { creationTime: 42 });
    await broker.producer('in').send(message);
    expect(broker.messages('in').map((m) => Buffer.from(m.bytes))).toEqual([Buffer.from(message)]);
  });

  it('without a name stores every message, also one sent twice', async () => {
    const broker = setup();
    const producer = broker.producer('in');
    const message = jsonMessage({ n: 1 });
    await producer.send(message);
    await producer.send(message);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 1 }]);
  });

  it('named, confirms a resent publishing id without storing it twice', async () => {
    const broker = setup();
    const producer = broker.producer('in', { name: 'feed' });
    await expect(producer.send({ n: 1 }, { publishingId: 10n })).resolves.toBe(10n);
    await expect(producer.send({ n: 1 }, { publishingId: 10n })).resolves.toBe(10n);
    await expect(producer.send({ n: 2 })).resolves.toBe(11n);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('named, continues after the last publishing id stored under its name', async () => {
    const broker = setup();
    const first = broker.producer('in', { name: 'feed' });
    await first.send({ n: 1 });
    await first.send({ n: 2 });
    await first.close();
    const again = broker.producer('in', { name: 'feed' });
    await expect(again.send({ n: 3 })).resolves.toBe(3n);
    await expect(broker.producer('in', { name: 'other' }).send({ n: 4 })).resolves.toBe(1n);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  it('resolves a send on its confirm, not when the message is stored', async () => {
    const broker = setup();
    const release = broker.holdConfirms('in');
    const producer = broker.producer('in');
    const confirmed: bigint[] = [];
    const send = producer.send({ n: 1 }).then((id) => confirmed.push(id));
    await settle();
    expect(bodies(broker)).toEqual([{ n: 1 }]); // stored: readers see it
    expect(confirmed).toEqual([]);
    release();
    await send;
    expect(confirmed).toEqual([1n]);
  });

  it('backpressure: at most maxInFlight unconfirmed; later sends wait in memory and go out as confirms come', async () => {
    const broker = setup();
    let release = broker.holdConfirms('in');
    const producer = broker.producer('in', { maxInFlight: 2 });
    const confirmed: bigint[] = [];
    const sends = [1, 2, 3, 4, 5].map((n) => producer.send({ n }).then((id) => confirmed.push(id)));
    await settle();
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }]);
    expect(confirmed).toEqual([]);

    // Two confirms come: two more messages go out, and wait for theirs.
    release();
    release = broker.holdConfirms('in');
    await settle();
    expect(confirmed).toEqual([1n, 2n]);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);

    // close waits for every confirm.
    let closed = false;
    const closing = producer.close().then(() => (closed = true));
    await settle();
    expect(closed).toBe(false);
    release();
    await closing;
    await Promise.all(sends);
    expect(confirmed).toEqual([1n, 2n, 3n, 4n, 5n]);
    expect(bodies(broker)).toHaveLength(5);
  });

  it("stores one write's messages as ONE chunk, as RabbitMQ stores a Publish frame's, each under its own id", async () => {
    const broker = setup();
    const release = broker.holdConfirms('in');
    const producer = broker.producer('in', { name: 'feed', maxInFlight: 8 });
    const sends = Array.from({ length: 20 }, (_, n) => producer.send({ n }));
    await settle();
    // The first 8 went out in one write: one chunk, its writer the last of their ids.
    expect(broker.chunks('in').map((c) => [c.messages.length, c.writer])).toEqual([
      [8, { producer: 'feed', publishingId: 8n }],
    ]);
    release();
    expect(await Promise.all(sends)).toEqual(sends.map((_, i) => BigInt(i + 1)));
    expect(bodies(broker)).toEqual(sends.map((_, n) => ({ n })));
    const chunks = broker.chunks('in');
    // Each chunk a write of several, its writer the id of its last message (offset + 1 here).
    expect(chunks.length).toBeLessThanOrEqual(4);
    for (const chunk of chunks) {
      expect(chunk.writer?.publishingId).toBe(chunk.firstOffset + BigInt(chunk.messages.length));
    }
    await expect(broker.target('in', { producer: 'feed' }).lastPublishingId()).resolves.toBe(20n);
  });

  it('deduplicates each message of one write on its own id: against those stored and those before it', async () => {
    const broker = setup();
    const producer = broker.producer('in', { name: 'feed' });
    await Promise.all([1, 2, 3].map((n) => producer.send({ n })));
    const ids = [2n, 5n, 4n, 6n];
    await expect(
      Promise.all(
        ids.map((publishingId) => producer.send({ id: Number(publishingId) }, { publishingId })),
      ),
    ).resolves.toEqual(ids);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { id: 5 }, { id: 6 }]);
    expect(broker.chunks('in').map((c) => [c.messages.length, c.writer?.publishingId])).toEqual([
      [3, 3n],
      [2, 6n],
    ]);
  });

  it('counts each message of one write as a publish of its own for faults: those before it stored first, those after it refused', async () => {
    const broker = setup();
    let storedWhenFired = -1;
    broker.injectFault({
      stream: 'in',
      atPublish: 3,
      point: 'lose-confirm',
      onFire: () => (storedWhenFired = broker.messages('in').length),
    });
    const producer = broker.producer('in', { name: 'feed' });
    const sends = await Promise.allSettled([1, 2, 3, 4, 5].map((n) => producer.send({ n })));
    const outcome = (s: PromiseSettledResult<bigint>) => {
      if (s.status === 'fulfilled') return s.value;
      const error = s.reason as PublishError;
      expect(error).toBeInstanceOf(PublishError);
      return [error.publishingId, error.retriable, /refused without sending/.test(error.message)];
    };
    expect(sends.map(outcome)).toEqual([
      1n,
      2n,
      [3n, true, false],
      [4n, true, true],
      [5n, true, true],
    ]);
    expect((sends[2] as PromiseRejectedResult).reason).toHaveProperty(
      'message',
      expect.stringContaining('confirm lost'),
    );
    expect(storedWhenFired).toBe(2);
    // The messages before the fault in one chunk, the one it lost the confirm of in its own.
    expect(broker.chunks('in').map((c) => [c.messages.length, c.writer?.publishingId])).toEqual([
      [2, 2n],
      [1, 3n],
    ]);
    // The producer reads its resume point again and sends on, after the ids it gave.
    await expect(producer.send({ n: 6 })).resolves.toBe(6n);
    expect(bodies(broker)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 6 }]);
  });

  it('holds confirms once however often held, until released; a release again does nothing', async () => {
    const broker = setup();
    const release = broker.holdConfirms('in');
    expect(broker.holdConfirms('in')).toBe(release);
    const producer = broker.producer('in');
    let confirmed = false;
    const send = producer.send({ n: 1 }).then(() => (confirmed = true));
    await settle();
    expect(confirmed).toBe(false);
    release();
    await send;
    release();
    await expect(producer.send({ n: 2 })).resolves.toBe(2n);
  });

  it('named with any characters: a non-ASCII name deduplicates, and one of 255 UTF-8 bytes is the longest', async () => {
    const broker = setup();
    for (const name of ['capteur-température-温度', '温'.repeat(85)]) {
      const producer = broker.producer('in', { name });
      await expect(producer.send({ name }, { publishingId: 7n })).resolves.toBe(7n);
      await expect(producer.send({ name }, { publishingId: 7n })).resolves.toBe(7n);
      await producer.close();
      await expect(broker.producer('in', { name }).send({ name })).resolves.toBe(8n);
    }
    expect(bodies(broker)).toHaveLength(4);
  });

  it.each([
    ['empty', { name: '' }, /^name must be a non-empty string/],
    // 86 characters, 258 bytes: the limit is on bytes, as RabbitMQ's.
    ['of 258 bytes', { name: '温'.repeat(86) }, /^name must be at most 255 UTF-8 bytes .*not 258/],
    ['of 256 bytes', { name: 'p'.repeat(256) }, /^name must be at most 255 UTF-8 bytes .*not 256/],
  ])('refuses a name %s with a ConfigError, before anything is sent', (_, options, message) => {
    const broker = setup();
    expect(() => broker.producer('in', options)).toThrow(ConfigError);
    expect(() => broker.producer('in', options)).toThrow(message);
    expect(broker.messages('in')).toEqual([]);
  });

  it("leaves the empty name to the unnamed producer: a job's target refuses it, as on RabbitMQ", () => {
    const broker = setup();
    expect(() => broker.target('in', { producer: '' })).toThrow(
      "producer must be a non-empty string, given: ''",
    );
  });

  it('refuses a missing stream, naming it', () => {
    const broker = setup();
    expect(() => broker.producer('nope')).toThrow(StreamNotFoundError);
    expect(() => broker.producer('nope')).toThrow("stream 'nope' does not exist");
    expect(() => broker.holdConfirms('nope')).toThrow(StreamNotFoundError);
  });

  it('refuses a message over the frame limit with a PublishError naming stream and cause, then sends on', async () => {
    const broker = new MemoryBroker({ frameMax: 1_000 });
    broker.createStream('in');
    const producer = broker.producer('in', { name: 'feed' });
    const error: unknown = await producer.send({ s: 'x'.repeat(2_000) }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ stream: 'in', publishingId: 1n, retriable: false });
    expect(String(error)).toMatch(
      /stream 'in'.*2\d{3} bytes uncompressed, over the limit of 975 per write/,
    );
    // Refused before the target, under the id it would have had: the next id is above it
    // (never reused: a gap is harmless, a reused id could be discarded).
    await expect(producer.send({ n: 1 })).resolves.toBe(2n);
    expect(bodies(broker)).toEqual([{ n: 1 }]);
  });

  it('refuses an id on an unnamed producer, a value without JSON form, and sends after close', async () => {
    const broker = setup();
    const producer = broker.producer('in');
    await expect(producer.send({}, { publishingId: 1n })).rejects.toThrow(
      /^publishingId needs a named producer/,
    );
    await expect(producer.send(undefined)).rejects.toThrow(/^message has no JSON form/);
    await producer.close();
    await expect(producer.send({})).rejects.toThrow(ConfigError);
    expect(broker.messages('in')).toEqual([]);
  });

  it('feeds a job, whose default event time is the creation time', async () => {
    const broker = setup();
    broker.createStream('out');
    const producer = broker.producer('in', { name: 'feed' });
    for (const [n, at] of [
      [1, 0],
      [2, 30_000],
      [4, 60_000],
    ] as const) {
      await producer.send({ n }, { creationTime: at });
    }
    await aggregate<{ n: number }>(broker.source('in'))
      .tumbling('1m')
      .reduce((sum, e) => sum + e.n, 0)
      .to(broker.target('out', { producer: 'sums' }))
      .run({ untilCaughtUp: true });
    // The window [0, 60 s) closed when the message created at 60 s came: by creation time,
    // not by the chunks' timestamps (all 1,000 here).
    const results = broker.messages('out').map((m) => decodeResult<number>(m.bytes));
    expect(results.map((r) => [r.windowStart, r.outputs[0]?.value])).toEqual([[0, 3]]);
  });
});
