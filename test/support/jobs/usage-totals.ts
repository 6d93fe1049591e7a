// The database-sink SIGKILL tests' job (test/integration/sink-sigkill.test.ts into PostgreSQL,
// pglite-sigkill.test.ts into a file-backed PGlite): a RabbitMQ stream of usage events, the
// batch their child process applies into `totals` (cents and messages per customer) and
// `seen` (each message's offset), and the `totals` the stream says.
import { jsonMessage, type SinkBatch, type SinkTransaction } from '../../../src/index.js';
import type { RabbitMQ } from '../../../src/rabbitmq/connection.js';

/** One usage event of the stream. */
export interface Usage {
  readonly customer: number;
  readonly cents: number;
}

/** The stream's `i`-th event: customer `i % customers`, cents from `i`. */
export const usageEvent = (i: number, customers: number): Usage => ({
  customer: i % customers,
  cents: (i * 7919) % 1000,
});

/** Creates `stream` and publishes its first `messages` events into it, 500 a chunk. */
export async function feedUsage(
  rabbit: RabbitMQ,
  stream: string,
  messages: number,
  customers: number,
): Promise<void> {
  await rabbit.createStream(stream);
  const feeder = rabbit.target(stream, { producer: 'feeder' });
  const pending: Promise<void>[] = [];
  for (let i = 0; i < messages; i += 500) {
    const chunk = Array.from({ length: 500 }, (_, j) => jsonMessage(usageEvent(i + j, customers)));
    pending.push(feeder.publish(BigInt(i + 499), chunk));
  }
  await Promise.all(pending);
  await feeder.close();
}

/**
 * The child's `apply`: lists the batch's offsets in `seen` and adds its events to `totals`
 * (applied twice, a batch would count twice), with `tx`'s statements.
 */
export async function applyUsage(tx: SinkTransaction, batch: SinkBatch<Usage>): Promise<void> {
  const offsets = batch.messages.map((m) => m.offset.toString());
  const customers = batch.messages.map((m) => m.value.customer);
  const cents = batch.messages.map((m) => m.value.cents);
  await tx.query('INSERT INTO seen (message_offset) SELECT unnest($1::bigint[])', [offsets]);
  await tx.query(
    'INSERT INTO totals (customer, cents, messages) ' +
      'SELECT customer, sum(cents), count(*) FROM unnest($1::int[], $2::bigint[]) AS u(customer, cents) ' +
      'GROUP BY customer ON CONFLICT (customer) DO UPDATE ' +
      'SET cents = totals.cents + excluded.cents, messages = totals.messages + excluded.messages',
    [customers, cents],
  );
}

/** What the stream's first `messages` events say `totals` holds, by customer (cents and messages as text). */
export function expectedUsageTotals(
  messages: number,
  customers: number,
): { customer: number; cents: string; messages: string }[] {
  const totals = Array.from({ length: customers }, () => ({ cents: 0, messages: 0 }));
  for (let i = 0; i < messages; i++) {
    const { customer, cents } = usageEvent(i, customers);
    const total = totals[customer] as { cents: number; messages: number };
    total.cents += cents;
    total.messages++;
  }
  return totals.map((t, customer) => ({
    customer,
    cents: String(t.cents),
    messages: String(t.messages),
  }));
}
