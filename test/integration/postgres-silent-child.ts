// The silent-server test's child: a database sink on PostgreSQL through the parent's TCP
// proxy, whose apply asks the parent to freeze the proxy (the server stops answering) and then
// runs a statement that hangs. It writes 'frozen?' when the parent should freeze, then, by
// mode, 'closed' once sink.close() returned ('close': no transactionTimeoutMs) or
// 'stopped <stage>' once the run rejected ('timeout': transactionTimeoutMs 1000, maxRetries 0).
// It never calls process.exit: the parent sees whether anything keeps the process alive.
import { createInterface } from 'node:readline';
import { databaseSink, eachBatch, SinkError } from '../../src/index.js';
import { jsonMessage } from '../../src/codecs/source-message.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { postgres } from '../../src/postgres/index.js';

const [mode, url] = process.argv.slice(2) as ['close' | 'timeout', string];
const tell = (line: string): void => void process.stdout.write(`${line}\n`);
const parentSays = createInterface({ input: process.stdin });
const frozen = new Promise<void>((resolve) => parentSays.once('line', () => resolve()));

const broker = new MemoryBroker();
broker.createStream('events');
broker.append('events', [jsonMessage({ n: 1 })]);
const sink = databaseSink({
  name: 'silent',
  source: broker.source('events'),
  database: postgres({ connectionString: url }),
  into: eachBatch({
    apply: async (tx) => {
      tell('frozen?');
      await frozen;
      parentSays.close();
      await tx.query('SELECT 1');
    },
  }),
  maxBatchDelayMs: 0,
  ...(mode === 'timeout' ? { transactionTimeoutMs: 1000, maxRetries: 0 } : {}),
});

const run = sink.run();
if (mode === 'close') {
  void run.catch((error: unknown) => tell(`failed ${String(error)}`));
  await frozen;
  await sink.close();
  tell('closed');
} else {
  const stage = await run.then(
    () => 'none',
    (error: unknown) => (error instanceof SinkError ? error.stage : String(error)),
  );
  tell(`stopped ${stage}`);
  await sink.close();
}
