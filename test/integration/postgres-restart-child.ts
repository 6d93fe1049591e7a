// The child process of postgres-restart.test.ts, over the sink's PostgreSQL adapter with a
// pool of its own (`postgres(config)`). It takes its steps from the parent, one line of stdin
// each, and answers each with one line:
//   (start)   creates the table `applied`, applies 1 beside another transaction, so the pool
//             keeps two clients, one of them idle through the stop: 'ready'
//   hold      starts a transaction applying 2 that waits on the server: 'holding', then, once
//             the server stopped under it, that transaction's error as JSON
//   stopped   a transaction applying 3 with the server down: its error as JSON
//   started   a transaction applying 4: 'applied'
//   (then)    close(): 'closed', and the process must exit by itself.
import { createInterface } from 'node:readline';
import { postgres } from '../../src/postgres/index.js';

const [url] = process.argv.slice(2);
if (url === undefined) throw new Error('usage: postgres-restart-child.ts URL');

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (line: string): void => void process.stdout.write(`${line}\n`);
const step = async (expected: string): Promise<void> => {
  const next = await lines.next();
  const value = next.done === true ? undefined : next.value;
  if (value !== expected) {
    throw new Error(`expected '${expected}' from the parent, got '${String(value)}'`);
  }
};
const sink = postgres({ connectionString: url, connectionTimeoutMillis: 5_000 });
const apply = (n: number) =>
  sink.transaction((tx) => tx.query('INSERT INTO applied VALUES ($1)', [n]));
const failure = (error: unknown): string => {
  const { code, message } = error as { code?: string; message?: string };
  return JSON.stringify({ code, message, retriable: sink.isRetriable(error) });
};

await sink.transaction((tx) => tx.query('CREATE TABLE applied (n int PRIMARY KEY)'));
await Promise.all([apply(1), sink.transaction((tx) => tx.query('SELECT pg_sleep(0.2)'))]);
say('ready');

await step('hold');
const held = sink.transaction(async (tx) => {
  await tx.query('INSERT INTO applied VALUES (2)');
  say('holding');
  await tx.query('SELECT pg_sleep(60)');
});
say(await held.then(() => 'committed', failure));

await step('stopped');
say(await apply(3).then(() => 'committed', failure));

await step('started');
await apply(4);
say('applied');

await sink.close();
process.stdin.destroy();
say('closed');
