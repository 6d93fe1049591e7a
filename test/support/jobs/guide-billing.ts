// The fragment of docs/guides/into-a-database.md#into-a-database (a `windowOutputs` sink of
// hourly totals into `billing`, late values to `billing_late`, dead letters to `billing_dead`)
// with its options as written, over a job of hourly totals on the embedded broker, so that its
// tests run it on a fresh database: PGlite (test/component/sink/) and PostgreSQL
// (test/integration/).
import {
  aggregate,
  jsonMessage,
  readResults,
  sourceMessage,
  type Aggregator,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { databaseSink, type DatabaseSink } from '../../../src/sink/database-sink.js';
import type { SinkDatabase } from '../../../src/database/sink-database.js';
import { windowOutputs } from '../../../src/sink/window-outputs.js';
import type { DecodedResult } from '../../../src/result-format/result-format.js';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;

interface Usage {
  readonly customer: string;
  readonly cents: number;
}

/** The sum of cents, as the output's value `valueOf` makes of it. */
const sumOfCents = (
  valueOf: (cents: number) => unknown,
): Aggregator<Usage, { cents: number }, unknown> => ({
  init: () => ({ cents: 0 }),
  add: (acc, usage) => ({ cents: acc.cents + usage.cents }),
  result: (acc) => valueOf(acc.cents),
});

/**
 * A broker whose 'hourly-totals' holds a job's totals of cents per customer and hour: 40
 * usage events of 3 customers over 4 hours, one of them late (an event of hour 0 after hour 1
 * opened) and one message that is not JSON (a dead letter). Each output's value is
 * `valueOf(cents)` (default `{ cents }`).
 */
export async function hourlyTotalsBroker(
  valueOf: (cents: number) => unknown = (cents) => ({ cents }),
): Promise<MemoryBroker> {
  const broker = new MemoryBroker({ now: () => T0 });
  broker.createStream('usage');
  broker.createStream('hourly-totals');
  for (let i = 0; i < 40; i++) {
    const usage: Usage = { customer: `c${i % 3}`, cents: 100 + i };
    broker.append('usage', [jsonMessage(usage, { creationTime: T0 + i * (HOUR / 10) })]);
    if (i === 15) {
      broker.append('usage', [jsonMessage({ customer: 'c0', cents: 7 }, { creationTime: T0 })]);
      broker.append('usage', [sourceMessage('not json')]);
    }
  }
  await aggregate<Usage>(broker.source('usage'))
    .onError('dead-letter')
    .tumbling('1h')
    .key((usage) => usage.customer)
    .aggregate(sumOfCents(valueOf))
    .to(broker.target('hourly-totals', { producer: 'hourly' }))
    .run({ untilCaughtUp: true });
  return broker;
}

/** The guide's sink, its options as the guide writes them. */
export function guideSink(
  broker: MemoryBroker,
  database: SinkDatabase,
): DatabaseSink<DecodedResult<{ cents: number }>> {
  return databaseSink({
    name: 'billing',
    source: broker.source('hourly-totals'),
    database,
    into: windowOutputs<{ cents: number }>({
      table: 'billing',
      columns: (output) => ({ cents: output.value.cents }),
      columnTypes: { cents: 'bigint' },
      lateTable: 'billing_late',
      deadLetterTable: 'billing_dead',
    }),
  });
}

/** One row of `billing`, its times in epoch ms and its cents as text (pg and PGlite alike). */
export interface BillingRow {
  readonly key: string;
  readonly start: string;
  readonly end: string;
  readonly count: number;
  readonly cents: string;
}

/** The rows of `billing` and the counts of `billing_late` and `billing_dead`. */
export async function billingTables(database: SinkDatabase): Promise<{
  readonly billing: readonly BillingRow[];
  readonly late: number;
  readonly dead: number;
}> {
  return database.transaction(async (tx) => {
    const { rows: billing } = await tx.query<BillingRow>(
      'SELECT key, (extract(epoch FROM window_start) * 1000)::bigint::text AS start, ' +
        '(extract(epoch FROM window_end) * 1000)::bigint::text AS end, count, cents::text AS cents ' +
        'FROM billing ORDER BY key, window_start',
    );
    const count = async (table: string): Promise<number> => {
      const { rows } = await tx.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
      return rows[0]?.n ?? -1;
    };
    return { billing, late: await count('billing_late'), dead: await count('billing_dead') };
  });
}

/** What `billingTables` must find: the job's last output of each window, its late values and dead letters. */
export async function expectedBilling(broker: MemoryBroker): Promise<{
  readonly billing: readonly BillingRow[];
  readonly late: number;
  readonly dead: number;
}> {
  const windows = new Map<string, BillingRow>();
  let late = 0;
  let dead = 0;
  for await (const { result } of readResults<{ cents: number }>(broker.source('hourly-totals'), {
    untilCaughtUp: true,
  })) {
    for (const output of result.outputs) {
      windows.set(`${String(output.key)}@${output.start}`, {
        key: String(output.key),
        start: String(output.start),
        end: String(output.end),
        count: output.count,
        cents: String(output.value.cents),
      });
    }
    late += result.late.length;
    dead += result.deadLetters.length;
  }
  const billing = [...windows.values()].sort((a, b) =>
    a.key === b.key ? Number(a.start) - Number(b.start) : a.key < b.key ? -1 : 1,
  );
  return { billing, late, dead };
}
