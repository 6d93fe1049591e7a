// The child process of rabbitmq-process.test.ts: what it does must leave a process that
// exits by itself, without an uncaught exception.
//   reconnect-close URL STREAM: connects, reads and publishes; once the parent has cut its
//     connections (a line on stdin) it works on through the new ones, closes, and returns.
//   refused URL: connects, reads and asks for the end offset with settings the broker
//     refuses; prints one JSON line per attempt with the error it got.
import { createInterface } from 'node:readline';
import { isRetriable } from '../../src/index.js';
import { rabbitSource, connect, parseStreamUrl } from '../../src/rabbitmq/index.js';

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
} else if (mode === 'refused') {
  const report = (what: string, error: unknown): void => {
    const { name, message, code, retriable } = error as Record<string, unknown>;
    process.stdout.write(JSON.stringify({ what, name, message, code, retriable }) + '\n');
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
} else {
  throw new Error(`unknown mode ${mode}`);
}
