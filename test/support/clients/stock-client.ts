// The stock rabbitmq-stream-js-client 1.0.0, as another service would use it, for tests that
// compare what it sees with what our adapter wrote.
import { connect, Offset, type Client } from 'rabbitmq-stream-js-client';
import { afterAll, beforeAll, inject } from 'vitest';
import { parseStreamUrl } from '../../../src/rabbitmq/connection-url.js';
import { silentLogger } from '../../../src/common/logger.js';

/** A test file's stock client connection. */
export interface StockForTests {
  /** The client; set in beforeAll, so read it inside tests and hooks only. */
  readonly client: Client;
  /** The bodies of the first `count` messages of `stream`, as the stock consumer decodes them. */
  consume(stream: string, count: number): Promise<string[]>;
}

/** Connects the stock client in beforeAll and closes it in afterAll: call it at top level. */
export function stockForTests(): StockForTests {
  let connection: Client | undefined;
  beforeAll(async () => {
    connection = await connect(parseStreamUrl(inject('rabbitmqUrl')), silentLogger);
  });
  afterAll(async () => {
    await connection?.close();
  });
  const stock: StockForTests = {
    get client() {
      if (connection === undefined) throw new Error('stockForTests: not connected yet');
      return connection;
    },
    async consume(stream, count) {
      const received: string[] = [];
      let done: () => void = () => undefined;
      const all = new Promise<void>((resolve) => (done = resolve));
      const consumer = await stock.client.declareConsumer(
        { stream, offset: Offset.first() },
        (message) => {
          received.push(message.content.toString());
          if (received.length === count) done();
        },
      );
      await all;
      await consumer.close();
      return received;
    },
  };
  return stock;
}
