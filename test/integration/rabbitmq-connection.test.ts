import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { Connection } from 'rabbitmq-stream-js-client/dist/connection.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { silentLogger } from '../../src/common/logger.js';
import { publishAll, readAll, rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { startBlackHole } from '../support/brokers/black-hole.js';
import { startProxy as startProxyTo } from '../support/brokers/tcp-proxy.js';
import { bound } from '../support/timing.js';

const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);

const real = rabbitForTests();

describe('the global setup', () => {
  it('hands the broker URL to tests and to child processes', () => {
    expect(url).toMatch(/^rabbitmq-stream:\/\//);
    expect(process.env.RABBITMQ_STREAM_URL).toBe(url);
  });
});

/** connect()'s default: what a first URL that never answers cost every connection. */
const CONNECT_TIMEOUT_MS = 10_000;

describe('the connection to RabbitMQ', () => {
  it('reads user, password, port and an encoded default vhost from the URL', async () => {
    const explicit = `rabbitmq-stream://${params.username}:${params.password}@${params.hostname}:${params.port}/%2F`;

    const other = await connect(explicit);
    const stream = await newStream(other);

    await other.deleteStream(stream);
    await other.close();
  });

  it('fails to connect with a message naming the address when nothing listens there', async () => {
    const error = await connect('rabbitmq-stream://guest:guest@127.0.0.1:1/', {
      connectTimeoutMs: 2_000,
    }).catch((e: unknown) => e);

    expect(String(error)).toMatch(/cannot connect to RabbitMQ at 127\.0\.0\.1:1/);
  });

  it('makes creating and deleting a stream idempotent', async () => {
    const stream = await newStream(real.rabbit);

    await real.rabbit.createStream(stream);
    await real.rabbit.deleteStream(stream);
    await real.rabbit.deleteStream(stream);
  });

  it('comes back after the connection is cut, where a stock client connection stays down (gaps/reconnect.ts)', async () => {
    const proxy = await startProxy();
    const stockConnection = await Connection.connect(
      { ...params, port: proxy.port, connectionId: randomUUID() },
      silentLogger,
    );
    const ours = await connect({ ...params, port: proxy.port }, { initialDelayMs: 50 });

    proxy.cut();
    await sleep(500);
    const stream = await newStream(ours);

    expect(stockConnection.ready).toBe(false);
    await ours.deleteStream(stream);
    await ours.close();
    await proxy.close();
  });

  it('keeps retrying while the broker is unreachable and resumes publishing when it is back', async () => {
    const proxy = await startProxy();
    const ours = await connect(
      { ...params, port: proxy.port },
      { initialDelayMs: 50, maxDelayMs: 200 },
    );
    const stream = await newStream(ours);
    const target = ours.target(stream, { producer: 'outage', confirmTimeoutMs: bound(5_000) });
    await target.publish(1n, [Buffer.from('one')]);

    proxy.refuse();
    proxy.cut();
    await sleep(100); // the loss is noticed; publishes now wait for a new connection
    const duringOutage = target.publish(2n, [Buffer.from('two')]);
    await sleep(700);
    proxy.accept();
    await duringOutage;

    expect(await target.lastPublishingId()).toBe(2n);
    await ours.deleteStream(stream);
    await ours.close();
    await proxy.close();
  });

  it('rejects a publish as retriable when its confirm does not come in time, and reconnects', async () => {
    const proxy = await startProxy();
    const ours = await connect({ ...params, port: proxy.port });
    const stream = await newStream(ours);
    const target = ours.target(stream, { producer: 'slow', confirmTimeoutMs: 300 });
    await target.publish(1n, [Buffer.from('one')]);

    proxy.freeze();
    const error = await target.publish(2n, [Buffer.from('two')]).catch((e: unknown) => e);

    expect(error).toMatchObject({ name: 'PublishError', retriable: true, publishingId: 2n });
    expect(String(error)).toMatch(/no confirm within 300 ms/);
    // Still frozen: only the new connection the timeout caused can carry these. The target
    // publishes again once the resume point was read (the Target contract).
    expect([1n, 2n]).toContain(await target.lastPublishingId());
    await target.publish(2n, [Buffer.from('two')]);
    expect(await target.lastPublishingId()).toBe(2n);
    await ours.close();
    await proxy.close();
  });
});

/** A new stream made on `broker`, deleted (on the file's connection) when the file ends. */
describe('a first URL whose node accepts and never answers (a frozen node)', () => {
  it(
    'connects and reads through the next URL within connectTimeoutMs, and closes every attempt on the frozen one',
    async () => {
      const hole = await startBlackHole();
      const stream = await newStream(real.rabbit);
      await publishAll(real.rabbit, stream, [Buffer.from('one'), Buffer.from('two')]);
      const frozenFirst = [
        `rabbitmq-stream://${params.username}:${params.password}@127.0.0.1:${hole.port}/`,
        url,
      ];

      const started = performance.now();
      const rabbit = await connect(frozenFirst, { connectTimeoutMs: CONNECT_TIMEOUT_MS });
      const connectMs = performance.now() - started;
      // A source's reads and its end offset: each opens connections of its own.
      const read = await readAll(rabbit, stream);
      const readMs = performance.now() - started - connectMs;
      await rabbit.close();

      console.log(
        `frozen first URL: connect ${connectMs.toFixed(0)} ms, endOffset and read ` +
          `${readMs.toFixed(0)} ms, ${hole.connections} connection(s) to the frozen node`,
      );
      // Each waited out connectTimeoutMs on the frozen node before trying the next URL.
      expect(connectMs).toBeLessThan(CONNECT_TIMEOUT_MS);
      expect(readMs).toBeLessThan(CONNECT_TIMEOUT_MS);
      expect(read.map((m) => Buffer.from(m).toString())).toEqual(['one', 'two']);
      expect(hole.connections).toBeGreaterThanOrEqual(1);
      await hole.allClosed(); // the attempts given up on are closed, not left hanging
      await hole.close();
    },
    bound(60_000),
  );
});

async function newStream(broker: RabbitMQ): Promise<string> {
  const stream = real.track(uniqueStream('connection-test'));
  await broker.createStream(stream);
  return stream;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

const startProxy = () => startProxyTo(params);
