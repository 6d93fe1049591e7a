// The npm run billing example, end to end, both ways: on the embedded broker and PGlite,
// and on RabbitMQ and PostgreSQL. After a crash in the job and in the sink (each twice) it must
// print a billing table equal to what the events say, to the cent: checked here against totals
// computed by this test from the events, not only by the example's own "yes".
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';
import { usageEvents } from '../../examples/billing/usage-events.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { bound } from '../support/timing.js';

const database = postgresForTests();

const run = (env: Record<string, string>) =>
  promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/billing.ts'], {
    env: { ...process.env, ...env },
  });

const HOUR_MS = 3_600_000;

/** 'customer hour events cents' per customer and hour, summed here from the events. */
function billFromEvents(): string[] {
  const totals = new Map<string, { events: number; cents: bigint }>();
  for (const { customer, at, cents } of usageEvents()) {
    expect(Number.isSafeInteger(cents)).toBe(true); // money in whole cents
    const hour = new Date(Math.floor(at / HOUR_MS) * HOUR_MS).toISOString();
    const key = `${customer} ${hour.slice(0, 10)} ${hour.slice(11, 16)}`;
    const total = totals.get(key) ?? { events: 0, cents: 0n };
    totals.set(key, { events: total.events + 1, cents: total.cents + BigInt(cents) });
  }
  return [...totals].map(([key, { events, cents }]) => `${key} ${events} ${cents}`).sort();
}

/** The example's printed billing table as 'customer hour events cents', its billing column. */
function printedBill(stdout: string): string[] {
  return [...stdout.matchAll(/^(\w+) +(\S+ \d\d:\d\d) +(\d+) +(\d+) +\d+ +(?:yes|NO)$/gm)]
    .map(([, customer, hour, events, cents]) => `${customer} ${hour} ${events} ${cents}`)
    .sort();
}

describe('the billing example', () => {
  it.each([
    ['the embedded broker and PGlite', () => ({})],
    [
      'RabbitMQ and PostgreSQL',
      () => ({
        STREAM_WINDOWS_BROKER: 'rabbitmq',
        RABBITMQ_STREAM_URL: inject('rabbitmqUrl'),
        POSTGRES_URL: database.url,
      }),
    ],
  ])(
    'should bill exactly what the events say after crashes in the job and the sink on %s',
    async (_name, env) => {
      const { stdout } = await run(env()); // rejects on a non-zero exit
      expect(stdout).toContain('run 1, job: crashed after-publish 2; restarting');
      expect(stdout).toContain('run 2, sink: crashed after-commit 1; restarting');
      expect(stdout).toContain('run 3, job: crashed before-publish 2; restarting');
      expect(stdout).toContain('run 4, sink: crashed before-commit 1; restarting');
      expect(stdout).toMatch(/^run 6, sink: caught up, \d+ results applied$/m);
      const expected = billFromEvents();
      expect(expected.length).toBe(24); // 4 customers, 6 hours
      expect(printedBill(stdout)).toEqual(expected);
      expect(stdout).toContain('late usage rows: 0');
      expect(stdout).toMatch(/^billing table equals the events: yes$/m);
    },
    bound(180_000),
  );

  it('should leave no schema of its own behind in PostgreSQL', async () => {
    const schemas = await database.query<{ name: string }>(
      "SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE 'billing\\_%'",
    );
    expect(schemas).toEqual([]);
  });
});
