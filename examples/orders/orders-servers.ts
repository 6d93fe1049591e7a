// The servers the orders example runs on: PGlite and the embedded broker in this process
// (default, nothing to install), or a real PostgreSQL and RabbitMQ (STREAM_WINDOWS_BROKER=
// rabbitmq, at POSTGRES_URL and RABBITMQ_STREAM_URL or the local ones that scripts/postgres.sh
// and scripts/rabbitmq.sh start), which child processes reach too. Each run gets a schema and
// streams of its own, so it starts empty; on the real servers they are removed at the end.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { MemoryBroker } from '../../src/memory/index.js';
import { pglite } from '../../src/pglite/index.js';
import { postgres } from '../../src/postgres/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/index.js';
import { redactSecrets } from '../../src/common/redact-secrets.js';
import type { ChainPlace, ChainServers } from './orders-chain.js';

export interface OrdersServers extends ChainServers {
  /** What it runs on, as printed (no password). */
  readonly name: string;
  /** Runs one statement outside the chain. */
  query<Row>(sql: string): Promise<Row[]>;
  /** How many messages `stream` holds. */
  messages(stream: string): Promise<bigint>;
  /** The environment a child process connects to the same servers with (real servers only). */
  readonly childEnv: Readonly<Record<string, string>>;
  /** Closes what it opened; on the real servers, first removes the run's schema and streams. */
  close(): Promise<void>;
}

export async function embeddedServers(): Promise<OrdersServers> {
  const db = await PGlite.create();
  const place = { schema: 'orders_example', ordersStream: 'orders', revenueStream: 'revenue' };
  await db.exec(`CREATE SCHEMA ${place.schema}`);
  const broker = new MemoryBroker();
  broker.createStream(place.ordersStream);
  broker.createStream(place.revenueStream);
  return {
    name: 'the embedded broker and PGlite, in this process',
    place,
    broker,
    port: () => pglite(db),
    query: async <Row>(sql: string) => (await db.query<Row>(sql)).rows,
    messages: (stream) => Promise.resolve(BigInt(broker.messages(stream).length)),
    childEnv: {},
    close: () => db.close(),
  };
}

/** A fresh schema and streams on the real servers, for the example's own process. */
export async function realServers(): Promise<OrdersServers> {
  const run = randomUUID().slice(0, 8);
  const place = {
    schema: `orders_${run}`,
    ordersStream: `orders-${run}`,
    revenueStream: `revenue-${run}`,
  };
  const servers = await joinServers(place, {
    POSTGRES_URL: process.env.POSTGRES_URL ?? started('scripts/postgres.sh'),
    RABBITMQ_STREAM_URL: process.env.RABBITMQ_STREAM_URL ?? started('scripts/rabbitmq.sh'),
  });
  await servers.query(`CREATE SCHEMA ${place.schema}`);
  await servers.broker.createStream(place.ordersStream);
  await servers.broker.createStream(place.revenueStream);
  return {
    ...servers,
    close: async () => {
      await servers.broker.deleteStream(place.ordersStream);
      await servers.broker.deleteStream(place.revenueStream);
      await servers.query(`DROP SCHEMA ${place.schema} CASCADE`);
      await servers.close();
    },
  };
}

/**
 * The real servers `env` names (POSTGRES_URL, RABBITMQ_STREAM_URL), for a run's `place`: how
 * the example's process and its children connect. Closing leaves the schema and streams.
 */
export async function joinServers(
  place: ChainPlace,
  env: Readonly<Record<string, string | undefined>>,
): Promise<OrdersServers & { readonly broker: RabbitMQ }> {
  const { POSTGRES_URL: postgresUrl = '', RABBITMQ_STREAM_URL: rabbitmqUrl = '' } = env;
  // The writers' connections, and the relay's and the sink's when this process runs them.
  const pool = new pg.Pool({ connectionString: postgresUrl, max: 12 });
  const rabbit = await connect(rabbitmqUrl);
  return {
    name:
      `RabbitMQ at ${redactSecrets(rabbitmqUrl)} (streams ${place.ordersStream}, ` +
      `${place.revenueStream})\nand PostgreSQL at ${redactSecrets(postgresUrl)} ` +
      `(schema ${place.schema})`,
    place,
    broker: rabbit,
    port: () => postgres(pool),
    query: async <Row>(sql: string) => (await pool.query(sql)).rows as Row[],
    messages: (stream) => rabbit.source(stream).endOffset(),
    childEnv: { POSTGRES_URL: postgresUrl, RABBITMQ_STREAM_URL: rabbitmqUrl },
    close: async () => {
      await rabbit.close();
      await pool.end();
    },
  };
}

/** The URL a scripts/*.sh server prints once it runs (it starts it when it does not). */
function started(script: string): string {
  return execFileSync(script, ['start'], { encoding: 'utf8' }).trim().split('\n').pop() ?? '';
}
