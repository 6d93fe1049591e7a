// The child process of rabbitmq-process.test.ts: what it does must leave a process that
// exits by itself, without an uncaught exception.
//   reconnect-close URL STREAM: connects, reads and publishes; once the parent has cut its
//     connections (a line on stdin) it works on through the new ones, closes, and returns.
//   refused URL: connects, reads and asks for the end offset with settings the broker
//     refuses; prints one JSON line per attempt with the error it got.
//   wait-abort URL: connects with a long waitForBrokerMs where no broker is up, aborts its
//     signal once the first attempt failed, and prints the error it got as a JSON line.
//   close-reconnecting URL: connects, drops the connection, closes while the reconnection
//     waits out its (minute-long) delay, and prints 'closed'.
//   producer URL STREAM: sends 50 messages with a named producer whose confirm deadline is 10
//     minutes, closes it and the connection, and prints 'closed'.
//   frozen-first URLS SOURCE TARGET: connects to the comma-separated URLs (the first one's node
//     never answers), runs a job summing SOURCE's { n } by fives into TARGET until caught up,
//     closes, and prints how long connecting and the run took as a JSON line.
import { createInterface } from 'node:readline';
import { aggregate, isRetriable } from '../../src/index.js';
import { rabbitSource, connect, parseStreamUrl } from '../../src/rabbitmq/index.js';
import { silentLogger } from '../../src/common/logger.js';
import { bound } from '../support/timing.js';

const [mode, url, stream] = process.argv.slice(2);
if (url === undefined) throw new Error('usage: connection-child.ts MODE URL [STREAM]');

if (mode === 'reconnect-close' && stream !== undefined) {
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const rabbit = await connect(url, { initialDelayMs: 50, maxDelayMs: 200 });
  await rabbit.target(stream, { producer: 'before-cut' }).publish(1n, [Buffer.from('one')]);
  const controller = new AbortController();
  const source = rabbit.source(stream, { reconnect: { initialDelayMs: 50, maxDelayMs: 200 } });
  const reading = (async () => {
    let seen = 0;
    for await (const chunk of source.read(0n, controller.signal)) {
      seen += chunk.count;
      if (seen === 1) process.stdout.write('ready\n');
      if (seen === 2) return;
    }
  })();
  await lines.next(); // the parent has cut every connection
  // Waits for the shared connection to come back; a request can still meet the old one.
  for (;;) {
    try {
      await rabbit.createStream(stream);
      break;
    } catch (error) {
      if (!isRetriable(error)) throw error;
    }
  }
  await rabbit.target(stream, { producer: 'after-cut' }).publish(1n, [Buffer.from('two')]);
  await reading; // the source came back too
  controller.abort();
  await rabbit.close();
  process.stdin.destroy();
  process.stdout.write('closed\n');
} else if (mode === 'producer' && stream !== undefined) {
  const rabbit = await connect(url);
  const producer = rabbit.producer(stream, { name: 'child', confirmTimeoutMs: 600_000 });
  await Promise.all(Array.from({ length: 50 }, (_, n) => producer.send({ n })));
  await producer.close();
  await rabbit.close();
  process.stdout.write('closed\n');
} else if (mode === 'frozen-first' && stream !== undefined) {
  const target = process.argv[5];
  if (target === undefined)
    throw new Error('usage: connection-child.ts frozen-first URLS SOURCE TARGET');
  const started = performance.now();
  const rabbit = await connect(url.split(','), { connectTimeoutMs: bound(10_000) });
  const connectMs = performance.now() - started;
  await aggregate<{ n: number }>(rabbit.source(stream, { timeoutMs: bound(10_000) }))
    .count(5)
    .reduce((sum, m) => sum + m.n, 0)
    .to(rabbit.target(target, { producer: 'frozen-first' }))
    .run({ untilCaughtUp: true });
  const runMs = performance.now() - started - connectMs;
  await rabbit.close();
  process.stdout.write(JSON.stringify({ connectMs, runMs }) + '\n');
} else if (mode === 'refused') {
  const report = (what: string, error: unknown): void => {
    const { name, message, responseCode, retriable } = error as Record<string, unknown>;
    process.stdout.write(JSON.stringify({ what, name, message, responseCode, retriable }) + '\n');
  };
  await connect(url).then(
    (rabbit) => rabbit.close(),
    (error: unknown) => report('connect', error),
  );
  const source = rabbitSource('any-stream', { connection: parseStreamUrl(url) });
  const reading = source.read(0n, new AbortController().signal)[Symbol.asyncIterator]().next();
  await reading.then(
    () => undefined,
    (error: unknown) => report('read', error),
  );
  await source.endOffset().then(
    () => undefined,
    (error: unknown) => report('endOffset', error),
  );
} else if (mode === 'wait-abort') {
  const controller = new AbortController();
  const error: unknown = await connect(url, {
    waitForBrokerMs: 60_000,
    initialDelayMs: 60_000, // a delay left running would keep the process a minute
    maxDelayMs: 60_000,
    signal: controller.signal,
    logger: { ...silentLogger, warn: () => controller.abort() }, // it waits for the broker
  }).then(
    (rabbit) => rabbit.close(),
    (e: unknown) => e,
  );
  const { name, message } = error as Record<string, unknown>;
  process.stdout.write(JSON.stringify({ name, message }) + '\n');
} else if (mode === 'close-reconnecting') {
  let retrying = (): void => undefined;
  const waiting = new Promise<void>((resolve) => (retrying = resolve));
  const rabbit = await connect(url, {
    initialDelayMs: 60_000,
    maxDelayMs: 60_000,
    logger: {
      ...silentLogger,
      warn: (_, message) => {
        if (message.startsWith('connecting to RabbitMQ again')) retrying();
      },
    },
  });
  rabbit.dropConnectionForTesting();
  await waiting;
  await rabbit.close();
  process.stdout.write('closed\n');
} else {
  throw new Error(`unknown mode ${mode}`);
}
