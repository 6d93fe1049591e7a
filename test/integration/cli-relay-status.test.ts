// `stream-windows status --relay` as a user runs it, against the real broker and PostgreSQL: an
// outbox relay publishes, more rows are committed, and the command reports the relay's position
// and the rows behind (table and JSON); while a transaction holds a gap open, the command shows
// the rows held back and the relay's metrics count the wait (the embedded database cannot hold
// a transaction open while the relay reads, so this is the wait's test on a real one); a relay
// to a super stream; how the command fails: no outbox table, an unreachable database; and that
// no way through it, failing or not, prints the database's password.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { Registry } from 'prom-client';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { createOutboxTable, outboxRelay, writeOutbox } from '../../src/index.js';
import { relayMetrics } from '../../src/metrics/index.js';
import { postgres } from '../../src/postgres/index.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, uniqueStream } from '../support/brokers/rabbitmq.js';
import { keysRoutedTo, relaySeries, until } from '../support/jobs/outbox-fixture.js';
import { SECRET } from '../support/secrets/shown-text.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
const database = postgresForTests();
const root = fileURLToPath(new URL('../..', import.meta.url));
/** A bound on one run of the command: far more than it needs (about a second). */
const RUN_BOUND_MS = bound(30_000);

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the command with node and tsx, stdout and stderr in pipes. */
function cli(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  const { CI: _ci, NO_COLOR: _noColor, DATABASE_URL: _db, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', ...args],
      {
        cwd: root,
        env: { ...inherited, RABBITMQ_STREAM_URL: inject('rabbitmqUrl'), ...env },
        timeout: RUN_BOUND_MS,
      },
      (error, stdout, stderr) =>
        resolve({
          code: error === null ? 0 : ((error.code as number | null) ?? null),
          stdout,
          stderr,
        }),
    );
  });
}

/** Commits one transaction of rows keyed `keys`, with event time `eventTime`. */
async function commit(
  pool: pg.Pool,
  table: string,
  keys: readonly string[],
  eventTime = Date.now(),
): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    for (const key of keys) await writeOutbox(client, { key, json: { key }, eventTime }, { table });
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

describe('stream-windows status --relay', () => {
  it(
    "should report a relay's position and the rows behind it, as a table and as JSON",
    async () => {
      const pool = database.pool();
      const stream = await real.newStream('relay-status');
      await createOutboxTable(postgres(pool), 'orders_outbox');
      await commit(pool, 'orders_outbox', ['a', 'b', 'a']);
      const relay = outboxRelay({
        name: 'orders-relay',
        database: postgres(pool),
        table: 'orders_outbox',
        broker: real.rabbit,
        to: stream,
      });
      await relay.run({ untilCaughtUp: true });
      await commit(pool, 'orders_outbox', ['c', 'd'], Date.now() - 120_000);
      const backlog = await relay.backlog();
      await relay.close();

      const args = ['status', '--relay', 'orders-relay', '--stream', stream];
      const json = await cli([...args, '--json', '--table', 'orders_outbox'], {
        DATABASE_URL: database.url,
      });
      expect(json.stderr).toBe('');
      expect(json.code).toBe(0);
      const status = JSON.parse(json.stdout) as Record<string, unknown>;
      const position = backlog.position as NonNullable<typeof backlog.position>;
      expect(status).toMatchObject({
        relay: 'orders-relay',
        table: 'orders_outbox',
        stream,
        lastPublishingId: String(backlog.lastPublishingId),
        position: {
          txid: String(position.txid),
          index: 2,
          rowId: String(position.rowId),
        },
        rows: '2',
      });
      expect(status['oldestAgeMs']).toBeGreaterThanOrEqual(120_000);

      const table = await cli([...args, '--table', 'orders_outbox', '--database', database.url]);
      expect(table.code).toBe(0);
      const [header, row, read] = table.stdout.trimEnd().split('\n');
      expect(header?.split(/\s{2,}/)).toEqual(HEADERS);
      expect(row?.split(/\s{2,}/).slice(0, 6)).toEqual([
        'orders-relay',
        stream,
        String(backlog.lastPublishingId),
        String(position.txid),
        String(position.rowId),
        '2',
      ]);
      expect(row).toMatch(/\s2m \d\ds$/);
      const url = new URL(database.url);
      expect(read).toBe(
        `outbox: table orders_outbox of postgres://${url.username}@${url.host}${url.pathname}`,
      );

      // A misspelt name has published nothing: every committed row is behind it.
      const unknown = await cli(
        ['status', '--relay', 'orders-rleay', '--stream', stream, '--table', 'orders_outbox'],
        { DATABASE_URL: database.url },
      );
      expect(unknown.code).toBe(0);
      const lines = unknown.stdout.split('\n');
      expect(lines[1]?.split(/\s{2,}/).slice(0, 6)).toEqual([
        'orders-rleay',
        stream,
        'none',
        '-',
        '-',
        '5',
      ]);
      expect(lines[2]).toBe(
        `relay 'orders-rleay' has published nothing on ${stream}: it would start at the first ` +
          'row of orders_outbox (a new relay, or a misspelt relay or stream name?)',
      );
    },
    bound(120_000),
  );

  it(
    'should show the rows a transaction holds back, and the metrics count the wait',
    async () => {
      const pool = database.pool();
      const stream = await real.newStream('relay-status-gap');
      await createOutboxTable(postgres(pool), 'gap_outbox');
      const relay = outboxRelay({
        name: 'gap-relay',
        database: postgres(pool),
        table: 'gap_outbox',
        broker: real.rabbit,
        to: stream,
        pollIntervalMs: 20,
      });
      const registry = new Registry();
      const metrics = relayMetrics(relay, { registry });
      let published = 0;
      let waiting = 0;
      relay.on('published', (event) => (published += event.rows));
      relay.on('waiting', () => waiting++);
      const stop = new AbortController();
      const run = relay.run({ signal: stop.signal });

      // An older transaction writes a row and stays open; a younger one commits two.
      const open = await pool.connect();
      await open.query('BEGIN');
      await writeOutbox(open, { key: 'held', json: { held: true } }, { table: 'gap_outbox' });
      await commit(pool, 'gap_outbox', ['x', 'y']);
      await until(() => waiting > 0, bound(20_000), "the relay's wait");

      const status = await cli(
        ['status', '--relay', 'gap-relay', '--stream', stream, '--table', 'gap_outbox', '--json'],
        { DATABASE_URL: database.url },
      );
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ position: null, rows: '2' });
      expect(await relaySeries(registry, 'waits_total', 'gap-relay')).toBe(1);
      expect(await relaySeries(registry, 'backlog_rows', 'gap-relay')).toBe(2);
      const waited = await relaySeries(registry, 'wait_seconds_total', 'gap-relay');
      expect(waited).toBeGreaterThan(0);
      expect(published).toBe(0);

      await open.query('COMMIT');
      open.release();
      await until(() => published === 3, bound(20_000), 'the three rows published');
      const total = await relaySeries(registry, 'wait_seconds_total', 'gap-relay');
      expect(total).toBeGreaterThan(waited);
      expect(await relaySeries(registry, 'wait_seconds_total', 'gap-relay')).toBe(total);
      expect(await relaySeries(registry, 'rows_published_total', 'gap-relay')).toBe(3);
      expect(await relaySeries(registry, 'backlog_rows', 'gap-relay')).toBe(0);
      stop.abort();
      await run;
      metrics.close();
      await relay.close();
    },
    bound(120_000),
  );

  it('should exit 1 naming an outbox table that does not exist', async () => {
    const stream = await real.newStream('relay-status-table');
    const run = await cli([
      'status',
      '--relay',
      'orders-relay',
      '--stream',
      stream,
      '--database',
      database.url,
      '--table',
      'outbox_elsewhere',
    ]);
    const url = new URL(database.url);
    url.password = '';
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `stream-windows: database ${url.toString()} has no outbox table 'outbox_elsewhere': ` +
        'no relay or writer has created it, or the relay names another (--table)\n',
    });
    // Asked, not created.
    expect(await database.query(`SELECT to_regclass('outbox_elsewhere')::text AS t`)).toEqual([
      { t: null },
    ]);
  });

  it('should exit 1 naming an unreachable database by its host, without the password', async () => {
    const stream = await real.newStream('relay-status-down');
    const run = await cli([
      'status',
      '--relay',
      'orders-relay',
      '--stream',
      stream,
      '--database',
      'postgres://someone:s3cret-pw@127.0.0.1:1/orders?password=s3cret-pw',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^stream-windows: could not read the relay's position from database postgres:\/\/someone@127\.0\.0\.1:1\/orders: .*ECONNREFUSED/,
    );
    expect(run.stderr).not.toContain('s3cret-pw');
  });
});

describe('stream-windows status --relay --super-stream', () => {
  it(
    "should show where a relay to a super stream resumes and each partition's standing",
    async () => {
      const pool = database.pool();
      const superStream = uniqueStream('relay-status-super');
      const partitions = await real.rabbit.createSuperStream(superStream, { partitions: 3 });
      onTestFinished(() => real.rabbit.deleteSuperStream(superStream));
      await createOutboxTable(postgres(pool), 'super_outbox');
      // Partitions 0 and 1 get rows; partition 2 none.
      const keys = [...keysRoutedTo(0, 3, 2), ...keysRoutedTo(1, 3, 2)];
      await commit(pool, 'super_outbox', keys);
      await commit(pool, 'super_outbox', keys);
      const relay = outboxRelay({
        name: 'super-relay',
        database: postgres(pool),
        table: 'super_outbox',
        broker: real.rabbit,
        toSuperStream: superStream,
        maxBatchRows: 3,
      });
      await relay.run({ untilCaughtUp: true });
      await commit(pool, 'super_outbox', keys.slice(0, 1), Date.now() - 120_000);
      const backlog = await relay.backlog();
      await relay.close();
      const [first, second, idle] = backlog.partitions ?? [];
      expect(idle).toEqual({ stream: partitions[2], lastPublishingId: 0n, through: 0n });

      const args = ['status', '--relay', 'super-relay', '--super-stream', superStream];
      const env = { DATABASE_URL: database.url };
      const json = await cli([...args, '--table', 'super_outbox', '--json'], env);
      expect(json.stderr).toBe('');
      expect(json.code).toBe(0);
      const position = backlog.position as NonNullable<typeof backlog.position>;
      const text = (value: bigint | undefined) => (value === undefined ? null : String(value));
      expect(JSON.parse(json.stdout)).toEqual({
        relay: 'super-relay',
        table: 'super_outbox',
        stream: superStream,
        lastPublishingId: String(backlog.lastPublishingId),
        partitions: (backlog.partitions ?? []).map((partition) => ({
          stream: partition.stream,
          lastPublishingId: String(partition.lastPublishingId),
          through: text(partition.through),
        })),
        position: {
          txid: String(position.txid),
          index: position.index,
          rowId: String(position.rowId),
        },
        rows: '1',
        oldestAgeMs: expect.any(Number) as number,
      });

      const table = await cli([...args, '--table', 'super_outbox'], env);
      expect(table.code).toBe(0);
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]?.split(/\s{2,}/)).toEqual([
        'RELAY',
        'SUPER STREAM',
        'THROUGH',
        'TXID',
        'ROW ID',
        'BEHIND',
        'OLDEST',
      ]);
      // Where it resumes: after its last row, every partition holding every row up to it.
      expect(lines[1]?.split(/\s{2,}/).slice(0, 6)).toEqual([
        'super-relay',
        superStream,
        String(backlog.lastPublishingId),
        String(position.txid),
        String(position.rowId),
        '1',
      ]);
      expect(lines.slice(2, 6).map((line) => line.split(/\s{2,}/))).toEqual([
        ['PARTITION', 'LAST ID', 'THROUGH'],
        [first?.stream, String(first?.lastPublishingId), String(first?.through)],
        [second?.stream, String(second?.lastPublishingId), String(second?.through)],
        [idle?.stream, 'none', '-'],
      ]);
    },
    bound(120_000),
  );
});

describe('stream-windows status --relay and the database password', () => {
  it(
    'should print no password, whatever happens: read, no table, a row gone, refused, unreachable, no such stream',
    async () => {
      // A role of the test's own, its password the one looked for.
      const role = `sw_status_${randomUUID().replaceAll('-', '').slice(0, 8)}`;
      await database.query(`CREATE ROLE ${role} LOGIN PASSWORD '${SECRET}'`);
      onTestFinished(async () => {
        await database.query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
        await database.query(`DROP ROLE ${role}`);
      });
      const pool = database.pool();
      const stream = await real.newStream('relay-status-secret');
      await createOutboxTable(postgres(pool), 'secret_outbox');
      await createOutboxTable(postgres(pool), 'emptied_outbox');
      await commit(pool, 'secret_outbox', ['a']);
      await commit(pool, 'emptied_outbox', ['b']);
      for (const table of ['secret_outbox', 'emptied_outbox']) {
        const relay = outboxRelay({
          name: table,
          database: postgres(pool),
          table,
          broker: real.rabbit,
          to: stream,
        });
        await relay.run({ untilCaughtUp: true });
        await relay.close();
      }
      await database.query('DELETE FROM emptied_outbox');
      await database.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${role}`);

      const url = new URL(database.url);
      url.username = role;
      url.password = SECRET;
      const secretUrl = url.toString();
      const refused = new URL(secretUrl);
      refused.password = `${SECRET}-not`;
      const inQuery = new URL(secretUrl);
      inQuery.password = '';
      inQuery.search = `?password=${SECRET}`;
      const unreachable = `postgres://${role}:${SECRET}@127.0.0.1:1/db?password=${SECRET}`;
      const relay = (name: string, table: string, to = ['--stream', stream]) => [
        'status',
        '--relay',
        name,
        ...to,
        '--table',
        table,
      ];
      const runs: [string, string[], string, number][] = [
        ['read', relay('secret_outbox', 'secret_outbox'), secretUrl, 0],
        ['read, as JSON', [...relay('secret_outbox', 'secret_outbox'), '--json'], secretUrl, 0],
        ['a password in the query', relay('secret_outbox', 'secret_outbox'), inQuery.toString(), 0],
        ['no such table', relay('secret_outbox', 'no_outbox'), secretUrl, 1],
        ["the stream's last row gone", relay('emptied_outbox', 'emptied_outbox'), secretUrl, 1],
        ['a password refused', relay('secret_outbox', 'secret_outbox'), refused.toString(), 1],
        ['unreachable', relay('secret_outbox', 'secret_outbox'), unreachable, 1],
        [
          'no such super stream',
          relay('secret_outbox', 'secret_outbox', ['--super-stream', 'no-such-super']),
          secretUrl,
          1,
        ],
      ];
      // Every other one through DATABASE_URL: the same reading, from the other place.
      for (const [i, [what, args, databaseUrl, code]] of runs.entries()) {
        const run =
          i % 2 === 0
            ? await cli([...args, '--database', databaseUrl])
            : await cli(args, { DATABASE_URL: databaseUrl });
        expect({ what, code: run.code }, run.stderr).toEqual({ what, code });
        expect(run.stdout + run.stderr, what).not.toContain(SECRET);
        // A failure says why in one line (the database by its user and host, or the relay's error).
        if (code === 1) expect(run.stderr, what).toMatch(/^stream-windows: \S.*\n$/);
      }
    },
    bound(120_000),
  );
});

const HEADERS = ['RELAY', 'STREAM', 'LAST ID', 'TXID', 'ROW ID', 'BEHIND', 'OLDEST'];
