// The npm run orders example, end to end, both ways: on the embedded broker and PGlite (its
// parts crashed in process), and on RabbitMQ and PostgreSQL (its parts child processes,
// SIGKILLed). After three kills of the relay, the job and the sink each it must print a report
// table equal to the committed orders, to the cent: checked here against revenue this test sums
// from the planned orders (the declined ones left out), not only by the example's own "yes".
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { plannedOrders, REGIONS } from '../../examples/orders/order-writers.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

const database = postgresForTests();

/** The example's exit code and what it printed (a failed run's output says where it differs). */
const run = (env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/orders.ts'], {
    env: { ...process.env, ...env },
  }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: unknown) => {
      const { code, stdout = '' } = error as { code?: unknown; stdout?: string };
      return { code, stdout };
    },
  );

const HOUR_MS = 3_600_000;

/** 'HH:MM dollars…' per hour, the regions in the example's order, summed here from the orders. */
function revenueFromOrders(): string[] {
  const cents = new Map<string, bigint>();
  for (const { region, placedAt, cents: amount, declined } of plannedOrders()) {
    expect(Number.isSafeInteger(amount)).toBe(true); // money in whole cents
    if (declined) continue;
    const hour = new Date(Math.floor(placedAt / HOUR_MS) * HOUR_MS).toISOString().slice(11, 16);
    cents.set(`${region} ${hour}`, (cents.get(`${region} ${hour}`) ?? 0n) + BigInt(amount));
  }
  const hours = [...new Set([...cents.keys()].map((key) => key.split(' ')[1]))].sort();
  return hours.map((hour) =>
    [hour, ...REGIONS.map((region) => dollars(cents.get(`${region} ${hour}`) ?? 0n))].join(' '),
  );
}

function dollars(cents: bigint): string {
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}

/** The example's printed report table as 'HH:MM dollars…', of the rows it marks the same. */
function printedReport(stdout: string): string[] {
  return [...stdout.matchAll(/^(\d\d:\d\d)((?: +[\d.]+){4}) +yes$/gm)].map(([, hour, cells]) =>
    [hour, ...(cells ?? '').trim().split(/ +/)].join(' '),
  );
}

describe('the orders example', () => {
  it.each([
    ['the embedded broker and PGlite', 'crashed', () => ({})],
    [
      'RabbitMQ and PostgreSQL',
      'SIGKILLed',
      () => ({
        STREAM_WINDOWS_BROKER: 'rabbitmq',
        RABBITMQ_STREAM_URL: inject('rabbitmqUrl'),
        POSTGRES_URL: database.url,
      }),
    ],
  ])(
    'should report exactly the committed orders after kills of the relay, the job and the sink on %s',
    async (_name, killed, env) => {
      const { code, stdout } = await run(env());
      expect(code, stdout).toBe(0);
      const orders = plannedOrders();
      const declined = orders.filter((order) => order.declined).length;
      expect(declined).toBeGreaterThan(0);
      expect(stdout).toContain(`placed ${orders.length} orders in `);
      expect(stdout).toContain(
        `${orders.length - declined} committed, ${declined} rolled back (payment declined)`,
      );
      for (const role of ['relay', 'job', 'sink']) {
        expect(stdout).toMatch(
          new RegExp(`^${role}: ${killed} [^;]+; [^;]+; [^;]+; restarted each time$`, 'm'),
        );
      }
      const expected = revenueFromOrders();
      expect(expected).toHaveLength(8); // 09:00 to 16:00, four regions each
      expect(printedReport(stdout)).toEqual(expected);
      expect(stdout).toContain('late orders: 0');
      expect(stdout).toContain(`messages on the orders stream: ${orders.length - declined}`);
      expect(stdout).toMatch(
        /^report table equals the committed orders, per region per hour, to the cent: yes$/m,
      );
    },
    // A transaction another test file holds open on the server holds the relay back (by
    // design: it waits, loses nothing) for as long as it stays open.
    bound(300_000),
  );

  it('should leave no schema of its own behind in PostgreSQL', async () => {
    const schemas = await database.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'orders\\_%'",
    );
    expect(schemas).toEqual([]);
  });
});
