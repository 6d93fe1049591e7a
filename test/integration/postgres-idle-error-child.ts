// The child process of postgres-idle-error.test.ts: a database sink over a pg pool of its own
// making (`postgres(pool)`), with no 'error' listener of its own unless told ('own'), reading
// the embedded broker into the table `applied`. Steps from the parent, one line of stdin each:
//   append FROM TO   appends the messages FROM..TO-1 (each its own number); the sink applies
//                    them and prints 'applied LAST' per batch
//   stop             stops the sink, prints 'summary JSON', and the process must exit by itself
// It prints 'warn MESSAGE' for each warning of the sink's logger and, given 'own', 'own CODE'
// for each error its own listener of the pool hears.
//   postgres-idle-error-child.ts URL [own]
import { createInterface } from 'node:readline';
import pg from 'pg';
import { databaseSink, eachBatch, jsonMessage } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { postgres } from '../../src/postgres/index.js';

const [url, own] = process.argv.slice(2);
if (url === undefined) throw new Error('usage: postgres-idle-error-child.ts URL [own]');
const say = (line: string): void => void process.stdout.write(`${line}\n`);

// Idle clients kept (no idleTimeoutMillis), so the parent finds them idle.
const pool = new pg.Pool({
  connectionString: url,
  application_name: 'idle-error-child',
  idleTimeoutMillis: 0,
});
if (own === 'own') {
  pool.on('error', (error) => say(`own ${String((error as { code?: unknown }).code)}`));
}
const broker = new MemoryBroker();
broker.createStream('events');
const quiet = (): void => undefined;
const sink = databaseSink<number>({
  name: 'idle-error',
  source: broker.source('events'),
  database: postgres(pool),
  maxBatchDelayMs: 0,
  logger: { debug: quiet, info: quiet, error: quiet, warn: (_, message) => say(`warn ${message}`) },
  into: eachBatch<number>({
    apply: async (tx, batch) => {
      await tx.query('INSERT INTO applied (n) SELECT unnest($1::int[])', [
        batch.messages.map((m) => m.value),
      ]);
    },
  }),
});
sink.on('applied', (event) => say(`applied ${event.lastOffset}`));
const stop = new AbortController();
const run = sink.run({ signal: stop.signal });

for await (const line of createInterface({ input: process.stdin })) {
  const [command, from, to] = line.split(' ');
  if (command === 'stop') break;
  for (let n = Number(from); n < Number(to); n++) broker.append('events', [jsonMessage(n)]);
}
process.stdin.destroy(); // else the open pipe would keep the process
stop.abort();
say(`summary ${JSON.stringify(await run)}`);
await sink.close();
await pool.end();
