// connect() waiting for a broker that is not up yet (waitForBrokerMs), refusing a wrong
// password or vhost at once all the same, and reporting losses and reconnections to a logger.
// A proxy started late on a port the client already tries stands in for a broker coming up;
// a server that accepts and drops every connection, for one that is not ready.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { AccessRefusedError, BrokerUnavailableError } from '../../src/common/errors.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { keepingLogger, type LogLine } from '../support/doubles/keeping-logger.js';
import { publishAll, rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { freePort, startProxy } from '../support/brokers/tcp-proxy.js';
import { bound } from '../support/timing.js';

const url = inject('rabbitmqUrl');
const params = parseStreamUrl(url);
const real = rabbitForTests();

const isRetry = ([, , message]: LogLine): boolean =>
  message.startsWith('connecting to RabbitMQ again');
const fieldsOf = (lines: readonly LogLine[]) => lines.map(([, fields]) => fields);

describe("connect()'s waitForBrokerMs", () => {
  it(
    'connects once a broker that was not up yet comes up within the wait',
    async () => {
      const port = await freePort();
      const logger = keepingLogger();
      const connecting = connect(
        { ...params, port },
        { waitForBrokerMs: 20_000, initialDelayMs: 50, maxDelayMs: 200, logger },
      );

      await logger.when(isRetry, 2); // two attempts found nothing listening
      const broker = await startProxy(params, port);
      const rabbit = await connecting;
      const stream = real.track(uniqueStream('wait-for-broker'));
      await rabbit.createStream(stream);

      const retries = logger.lines.filter(isRetry);
      expect(fieldsOf(retries).slice(0, 2)).toEqual([
        {
          broker: `127.0.0.1:${port}`,
          retry: 1,
          delayMs: 50,
          cause: expect.stringMatching(/ECONNREFUSED/),
        },
        {
          broker: `127.0.0.1:${port}`,
          retry: 2,
          delayMs: 100,
          cause: expect.stringMatching(/ECONNREFUSED/),
        },
      ]);
      expect(logger.lines.at(-1)).toEqual([
        'info',
        { broker: `127.0.0.1:${port}`, retries: retries.length, waitedMs: expect.any(Number) },
        'connected to RabbitMQ',
      ]);
      await rabbit.close();
      await broker.close();
    },
    bound(15_000),
  );

  it('fails at the first attempt without it, as by default', async () => {
    const notReady = await droppingServer();
    const logger = keepingLogger();

    const error = await connect({ ...params, port: notReady.port }, { logger }).catch(
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(BrokerUnavailableError);
    expect(String(error)).toMatch(
      /cannot connect to RabbitMQ at 127\.0\.0\.1:\d+: the connection closed during the handshake$/,
    );
    expect(notReady.connections()).toBe(1);
    expect(logger.lines).toEqual([]);
    await notReady.close();
  });

  it(
    'gives up after the wait with a BrokerUnavailableError naming the wait, the attempts and the last cause',
    async () => {
      const notReady = await droppingServer();
      const logger = keepingLogger();

      const error = await connect(
        { ...params, port: notReady.port },
        { waitForBrokerMs: 600, initialDelayMs: 50, maxDelayMs: 100, logger },
      ).catch((e: unknown) => e);

      expect(error).toBeInstanceOf(BrokerUnavailableError);
      expect(error).toMatchObject({ retriable: true, cause: expect.any(BrokerUnavailableError) });
      const [, waited, attempts] =
        /^no connection to RabbitMQ at 127\.0\.0\.1:\d+ after waiting (\d+) ms and (\d+) failed attempts \(waitForBrokerMs: 600\); the last one failed: cannot connect to RabbitMQ at 127\.0\.0\.1:\d+: the connection closed during the handshake$/.exec(
          (error as Error).message,
        ) ?? [];
      expect(Number(waited)).toBeGreaterThanOrEqual(600);
      expect(Number(attempts)).toBe(notReady.connections());
      expect(Number(attempts)).toBeGreaterThan(2);
      const delays = fieldsOf(logger.lines.filter(isRetry)).map(
        (fields) => (fields as { delayMs: number }).delayMs,
      );
      expect(delays).toHaveLength(Number(attempts) - 1);
      expect(delays.slice(0, 2)).toEqual([50, 100]); // the backoff of initialDelayMs and maxDelayMs
      expect(Math.max(...delays)).toBe(100);
      await notReady.close();
    },
    bound(15_000),
  );

  // Side by side: RabbitMQ answers each refusal after about 3 s.
  it.concurrent.for([
    {
      refused: 'a wrong password',
      where: { ...params, password: `wrong-${randomUUID()}` },
      responseCode: 8,
      cause: /user 'guest': authentication failure \(code 8\)$/,
    },
    {
      refused: 'a virtual host that does not exist',
      where: { ...params, vhost: `no-such-vhost-${randomUUID()}` },
      responseCode: 12,
      cause: /virtual host 'no-such-vhost-[^']+': virtual host access failure \(code 12\)$/,
    },
  ])(
    'refuses $refused at once with AccessRefusedError, waiting or not',
    { timeout: bound(15_000) },
    async ({ where, responseCode, cause }, { expect }) => {
      const logger = keepingLogger();
      const waitForBrokerMs = 60_000;
      const started = Date.now();

      const error = await connect(where, { waitForBrokerMs, initialDelayMs: 50, logger }).catch(
        (e: unknown) => e,
      );

      expect(error).toBeInstanceOf(AccessRefusedError);
      expect(error).toMatchObject({
        responseCode,
        retriable: false,
        message: expect.stringMatching(cause),
      });
      expect(logger.lines.filter(isRetry)).toEqual([]); // never tried again
      expect(Date.now() - started).toBeLessThan(waitForBrokerMs); // a bound: it did not wait
    },
  );

  it(
    'gives up at once when its signal aborts during the wait',
    async () => {
      const port = await freePort();
      const logger = keepingLogger();
      const controller = new AbortController();
      const connecting = connect(
        { ...params, port },
        {
          waitForBrokerMs: 60_000,
          initialDelayMs: 60_000,
          maxDelayMs: 60_000,
          logger,
          signal: controller.signal,
        },
      ).catch((e: unknown) => e);

      await logger.when(isRetry); // waiting a minute before the next attempt
      controller.abort();
      const error = await connecting;

      expect(error).toBeInstanceOf(BrokerUnavailableError);
      expect(String(error)).toMatch(
        /connecting to RabbitMQ at 127\.0\.0\.1:\d+ was aborted after \d+ ms and 1 failed attempts; the last one failed: .*ECONNREFUSED/,
      );
    },
    bound(15_000),
  );

  it('makes no attempt when its signal is aborted already', async () => {
    const notReady = await droppingServer();

    const error = await connect(
      { ...params, port: notReady.port },
      { waitForBrokerMs: 60_000, signal: AbortSignal.abort() },
    ).catch((e: unknown) => e);

    expect(String(error)).toMatch(/was aborted after \d+ ms and 0 failed attempts$/);
    expect(notReady.connections()).toBe(0);
    await notReady.close();
  });
});

describe("connect()'s logger", () => {
  it('hears of a dropped connection, the attempt to reconnect with its delay and cause, and the reconnection', async () => {
    const logger = keepingLogger();
    const rabbit = await connect(url, { initialDelayMs: 50, logger });
    const broker = `${params.hostname}:${params.port}`;

    rabbit.dropConnectionForTesting();
    await rabbit.createStream(real.track(uniqueStream('logged-reconnect'))); // waits for it

    expect(logger.lines).toEqual([
      ['info', { broker, retries: 0, waitedMs: expect.any(Number) }, 'connected to RabbitMQ'],
      ['warn', { broker, cause: 'connection dropped' }, 'connection to RabbitMQ lost'],
      [
        'warn',
        { broker, retry: 1, delayMs: 50, cause: 'connection dropped' },
        'connecting to RabbitMQ again in 50 ms',
      ],
      ['info', { broker, retries: 1, downMs: expect.any(Number) }, 'reconnected to RabbitMQ'],
    ]);
    await rabbit.close();
  });

  it(
    'reports each failed reconnection attempt with its growing delay and its cause',
    async () => {
      const proxy = await startProxy(params);
      const logger = keepingLogger();
      const rabbit = await connect(
        { ...params, port: proxy.port },
        { initialDelayMs: 50, maxDelayMs: 200, logger },
      );

      proxy.refuse();
      proxy.cut();
      await logger.when(isRetry, 4);
      proxy.accept();
      await rabbit.createStream(real.track(uniqueStream('logged-attempts'))); // waits for it

      const retries = logger.lines.filter(isRetry);
      const handshakeClosed = expect.stringMatching(/the connection closed during the handshake$/);
      expect(fieldsOf(retries).slice(0, 4)).toEqual([
        { broker: `127.0.0.1:${proxy.port}`, retry: 1, delayMs: 50, cause: 'connection closed' },
        { broker: `127.0.0.1:${proxy.port}`, retry: 2, delayMs: 100, cause: handshakeClosed },
        { broker: `127.0.0.1:${proxy.port}`, retry: 3, delayMs: 200, cause: handshakeClosed },
        { broker: `127.0.0.1:${proxy.port}`, retry: 4, delayMs: 200, cause: handshakeClosed },
      ]);
      expect(logger.lines.at(-1)).toEqual([
        'info',
        { broker: `127.0.0.1:${proxy.port}`, retries: retries.length, downMs: expect.any(Number) },
        'reconnected to RabbitMQ',
      ]);
      await rabbit.close();
      await proxy.close();
    },
    bound(15_000),
  );
});

describe("rabbit.source()'s logger", () => {
  it(
    "is connect()'s: a source reports its retry with its delay and cause, and reading again",
    async () => {
      const proxy = await startProxy(params);
      const logger = keepingLogger();
      const rabbit = await connect({ ...params, port: proxy.port }, { initialDelayMs: 50, logger });
      const stream = await real.newStream('logged-source'); // written to without the proxy
      await publishAll(real.rabbit, stream, [Buffer.from('one')]);
      const source = rabbit.source(stream, { credit: 1, reconnect: { initialDelayMs: 50 } });
      const reading = source.read(0n, new AbortController().signal)[Symbol.asyncIterator]();

      expect((await reading.next()).value).toMatchObject({ firstOffset: 0n });
      proxy.cut();
      await publishAll(real.rabbit, stream, [Buffer.from('two')]);
      expect((await reading.next()).value).toMatchObject({ firstOffset: 1n });

      const { leader } = await real.rabbit.members(stream);
      const readingOn = (offset: string) => [
        'debug',
        {
          broker: `127.0.0.1:${proxy.port}`,
          stream,
          node: `${leader.host}:${leader.port}`,
          offset,
        },
        `reading '${stream}' on ${leader.host}:${leader.port}`,
      ];
      expect(logger.lines.filter(([, fields]) => 'stream' in fields)).toEqual([
        readingOn('0'),
        [
          'warn',
          {
            broker: `127.0.0.1:${proxy.port}`,
            stream,
            retry: 1,
            delayMs: 50,
            offset: '1',
            cause: expect.stringMatching(
              /at offset 1 failed: the subscription was lost: connection closed$/,
            ),
          },
          `reading '${stream}' again in 50 ms`,
        ],
        readingOn('1'),
        [
          'info',
          { broker: `127.0.0.1:${proxy.port}`, stream, retries: 1, offset: '1' },
          `reading '${stream}' again`,
        ],
      ]);
      await reading.return?.(undefined);
      await rabbit.close();
      await proxy.close();
    },
    bound(15_000),
  );
});

/** A server that accepts every connection and closes it at once: a broker not ready yet. */
async function droppingServer(): Promise<{
  port: number;
  connections(): number;
  close(): Promise<void>;
}> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
