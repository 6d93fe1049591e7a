// The producer on the real broker: the way a user puts a job's input on a stream. Each
// message is confirmed under its own publishing id, at most maxInFlight are unconfirmed,
// a named producer deduplicates and continues after its last id, and a job reads what it
// wrote by its creation time.
import { afterAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  PublishError,
  ResumePointError,
} from '../../src/index.js';
import { decodeMessage } from '../../src/codecs/amqp-message.js';
import { connect, parseStreamUrl, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { readAll, rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { startProxy, type TcpProxy } from '../support/brokers/tcp-proxy.js';

const real = rabbitForTests();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
});
/** Stream protocol keys: a client's Publish, the broker's PublishConfirm. */
const PUBLISH = 0x0002;
const PUBLISH_CONFIRM = 0x0003;

/** A connection through a new proxy to the test broker, closed at the end of the test. */
async function throughProxy(): Promise<{ proxy: TcpProxy; proxied: RabbitMQ }> {
  const proxy = await startProxy(parseStreamUrl(inject('rabbitmqUrl')));
  proxies.push(proxy);
  const url = new URL(inject('rabbitmqUrl'));
  url.hostname = '127.0.0.1';
  url.port = String(proxy.port);
  const proxied = await connect(url.toString());
  onTestFinished(async () => {
    proxy.cut();
    await proxied.close();
  });
  return { proxy, proxied };
}

/** The JSON bodies `stream` holds, in offset order. */
async function bodies(stream: string): Promise<unknown[]> {
  return (await readAll(real.rabbit, stream)).map((bytes) => {
    const { body } = decodeMessage(bytes);
    if (body?.type !== 'data') throw new Error('not a data section');
    return JSON.parse(Buffer.from(body.sections[0] ?? []).toString('utf8')) as unknown;
  });
}

describe('rabbit.producer', () => {
  it('confirms each message under its own id, and a job reads them by creation time', async () => {
    const input = await real.newStream('producer-in');
    const output = await real.newStream('producer-out');
    const producer = real.rabbit.producer(input, { maxInFlight: 8 });
    // 3 sensors, one reading every 10 s for 3 minutes: 54 messages sent without waiting.
    const sends: Promise<bigint>[] = [];
    for (let at = 0; at < 180_000; at += 10_000) {
      for (const sensor of ['a', 'b', 'c']) {
        sends.push(producer.send({ sensor, celsius: 1 }, { creationTime: at }));
      }
    }
    const ids = await Promise.all(sends);
    await producer.close();
    expect(ids).toEqual(sends.map((_, i) => BigInt(i + 1)));
    expect(await bodies(input)).toHaveLength(54);

    await aggregate<{ sensor: string; celsius: number }>(real.rabbit.source(input))
      .tumbling('1m')
      .key((r) => r.sensor)
      .reduce((sum, r) => sum + r.celsius, 0)
      .to(real.rabbit.target(output, { producer: 'producer-job' }))
      .run({ untilCaughtUp: true });
    // The third minute's window stays open: nothing after it has come yet.
    const results = (await readAll(real.rabbit, output)).map((m) => decodeResult<number>(m));
    expect(results.map((r) => [r.windowStart, r.outputs.map((o) => [o.key, o.value])])).toEqual([
      [
        0,
        [
          ['a', 6],
          ['b', 6],
          ['c', 6],
        ],
      ],
      [
        60_000,
        [
          ['a', 6],
          ['b', 6],
          ['c', 6],
        ],
      ],
    ]);
  });

  it('named: a resent id is confirmed and not stored twice; a restarted producer continues after its last id', async () => {
    const stream = await real.newStream('producer-dedup');
    const first = real.rabbit.producer(stream, { name: 'feed' });
    expect(await Promise.all([1, 2, 3].map((n) => first.send({ n })))).toEqual([1n, 2n, 3n]);
    await expect(first.send({ n: 2 }, { publishingId: 2n })).resolves.toBe(2n);
    await first.close();

    const again = real.rabbit.producer(stream, { name: 'feed' });
    await expect(again.send({ n: 4 })).resolves.toBe(4n);
    await expect(again.send({ n: 10 }, { publishingId: 10n })).resolves.toBe(10n);
    await expect(again.send({ n: 11 })).resolves.toBe(11n);
    await again.close();
    expect(await bodies(stream)).toEqual([
      { n: 1 },
      { n: 2 },
      { n: 3 },
      { n: 4 },
      { n: 10 },
      { n: 11 },
    ]);
  });

  it('sends beyond maxInFlight wait: with confirms held back, only maxInFlight reach the broker', async () => {
    const stream = await real.newStream('producer-backpressure');
    const { proxy, proxied } = await throughProxy();
    const producer = proxied.producer(stream, { maxInFlight: 2, confirmTimeoutMs: 8_000 });
    await producer.send({ n: 0 }); // declared, confirmed
    proxy.freeze(); // the broker's confirms no longer reach the producer
    const sends = [1, 2, 3, 4, 5].map((n) => producer.send({ n }).catch((e: unknown) => e));
    // While no confirm comes back, only maxInFlight more messages reach the broker.
    const deadline = Date.now() + 6_000;
    while ((await bodies(stream)).length < 3 && Date.now() < deadline) await pause(100);
    await pause(1_000);
    expect(await bodies(stream)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);

    // Unconfirmed in time: 1 and 2 fail as retriable (they were stored all the same); the
    // others go out on the next connection. Nothing is written twice by the producer.
    const outcomes = await Promise.all(sends);
    for (const outcome of outcomes.slice(0, 2)) {
      expect(outcome).toBeInstanceOf(PublishError);
      expect(outcome).toMatchObject({ stream, retriable: true });
    }
    const stored = await bodies(stream);
    expect(stored.slice(0, 3)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
    const later = outcomes
      .slice(2)
      .flatMap((outcome, i) => (typeof outcome === 'bigint' ? [{ n: i + 3 }] : []));
    expect(stored.slice(3)).toEqual(later);
  });

  it('a send resolves on its confirm: stored but unconfirmed, it waits, and fails as retriable when none comes', async () => {
    const stream = await real.newStream('producer-confirms');
    const { proxy, proxied } = await throughProxy();
    const producer = proxied.producer(stream, { confirmTimeoutMs: 3_000 });
    await producer.send({ n: 0 }); // declared, confirmed
    proxy.freeze(); // the broker's confirms no longer reach the producer
    let settled = false;
    const send = producer.send({ n: 1 }).finally(() => (settled = true));
    const deadline = Date.now() + 2_500;
    while ((await bodies(stream)).length < 2 && Date.now() < deadline) await pause(100);
    expect(await bodies(stream)).toEqual([{ n: 0 }, { n: 1 }]);
    expect(settled).toBe(false);
    const error: unknown = await send.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PublishError);
    expect(error).toMatchObject({ stream, publishingId: 2n, retriable: true });
  });

  it('sends beyond maxInFlight go out as confirms come: none reaches the broker before the first confirms', async () => {
    const stream = await real.newStream('producer-resume');
    const { proxy, proxied } = await throughProxy();
    const producer = proxied.producer(stream, { maxInFlight: 2 });
    await producer.send({ n: 0 }); // declared, confirmed
    const confirmsBefore = proxy.fromBroker.filter((key) => key === PUBLISH_CONFIRM).length;
    // The first Publish, and everything the producer writes after it, is held in the proxy.
    const held = proxy.holdFrame(PUBLISH);
    const confirmed: bigint[] = [];
    const sends = [1, 2, 3, 4, 5].map((n) => producer.send({ n }).then((id) => confirmed.push(id)));
    const release = await held;
    await pause(500);
    expect(confirmed).toEqual([]);
    expect(await bodies(stream)).toEqual([{ n: 0 }]);
    release();
    await Promise.all(sends);
    expect(confirmed).toEqual([2n, 3n, 4n, 5n, 6n]);
    expect(await bodies(stream)).toEqual([0, 1, 2, 3, 4, 5].map((n) => ({ n })));
    // At most two in flight: the five went out in at least three writes, each confirmed
    // before the next could go (unbounded, all five would have been held in one).
    const confirms = proxy.fromBroker.filter((key) => key === PUBLISH_CONFIRM).length;
    expect(confirms - confirmsBefore).toBeGreaterThanOrEqual(3);
  });

  it('refuses a bad name with a ConfigError before sending anything', async () => {
    const stream = await real.newStream('producer-names');
    expect(() => real.rabbit.producer(stream, { name: '' })).toThrow(ConfigError);
    expect(() => real.rabbit.producer(stream, { name: 'p'.repeat(256) })).toThrow(
      /^name must be at most 255 UTF-8 bytes .*not 256/,
    );
    // 86 characters, 258 bytes: the limit is on bytes, as the broker's.
    expect(() => real.rabbit.producer(stream, { name: '温'.repeat(86) })).toThrow(
      /^name must be at most 255 UTF-8 bytes .*not 258/,
    );
    expect(await bodies(stream)).toEqual([]);
  });

  it('named with any characters: a non-ASCII name, and one of 255 UTF-8 bytes, deduplicate and resume on the broker', async () => {
    const stream = await real.newStream('producer-utf8');
    for (const name of ['capteur-température-温度', '温'.repeat(85)]) {
      const producer = real.rabbit.producer(stream, { name });
      await expect(producer.send({ name }, { publishingId: 7n })).resolves.toBe(7n);
      await expect(producer.send({ name }, { publishingId: 7n })).resolves.toBe(7n);
      await producer.close();
      const again = real.rabbit.producer(stream, { name });
      await expect(again.send({ name })).resolves.toBe(8n);
      await again.close();
    }
    expect(await bodies(stream)).toHaveLength(4);
  });

  it('fails a send to a missing stream with a final typed error naming it', async () => {
    const stream = uniqueStream('producer-missing');
    const unnamed = real.rabbit.producer(stream);
    const refused: unknown = await unnamed.send({ n: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PublishError);
    expect(refused).toMatchObject({ stream, retriable: false });
    expect(String(refused)).toContain(`stream '${stream}' failed (code 2): stream does not exist`);
    await unnamed.close();

    const named = real.rabbit.producer(stream, { name: 'feed' });
    const unknown: unknown = await named.send({ n: 1 }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ResumePointError);
    expect(unknown).toMatchObject({ stream, retriable: false });
    expect(String(unknown)).toContain(`producer 'feed' on stream '${stream}' failed (code 2)`);
    await named.close();
  });

  it('refuses a message over the frame limit, naming stream and cause, and sends on', async () => {
    const stream = await real.newStream('producer-large');
    const producer = real.rabbit.producer(stream, { name: 'feed' });
    const tooLarge: unknown = await producer
      .send({ s: 'x'.repeat(2_000_000) })
      .catch((e: unknown) => e);
    expect(tooLarge).toBeInstanceOf(PublishError);
    expect(tooLarge).toMatchObject({ stream, publishingId: 1n, retriable: false });
    expect(String(tooLarge)).toMatch(/over the limit of \d+ per write/);
    await expect(producer.send({ n: 1 })).resolves.toBe(2n);
    await producer.close();
    expect(await bodies(stream)).toEqual([{ n: 1 }]);
  });

  it('close waits for every confirm', async () => {
    const stream = await real.newStream('producer-close');
    const producer = real.rabbit.producer(stream, { maxInFlight: 4 });
    const settled: bigint[] = [];
    const sends = Array.from({ length: 40 }, (_, n) =>
      producer.send({ n }).then((id) => settled.push(id)),
    );
    await producer.close();
    expect(settled).toHaveLength(40);
    await Promise.all(sends);
    await expect(producer.send({ n: 40 })).rejects.toThrow(ConfigError);
    expect(await bodies(stream)).toHaveLength(40);
  });
});
