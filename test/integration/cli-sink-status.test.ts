// `stream-windows status --sink` as a user runs it, against the real broker and PostgreSQL: a
// database sink applies a stream, more is written, and the command reports the sink's
// checkpoint and lag (table and JSON), for one stream and a super stream's partitions; and how
// it fails: no checkpoint table, an unreachable database, no `pg` installed.
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, inject, it, onTestFinished } from 'vitest';
import { databaseSink, eachBatch, jsonMessage } from '../../src/index.js';
import { postgres } from '../../src/postgres/index.js';
import type { Source } from '../../src/ports/ports.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
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

/** Runs the command with node and tsx (`imports` first), stdout and stderr in pipes. */
function cli(
  args: readonly string[],
  env: Record<string, string> = {},
  imports: readonly string[] = [],
): Promise<Run> {
  const { CI: _ci, NO_COLOR: _noColor, DATABASE_URL: _db, ...inherited } = process.env;
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...imports.flatMap((i) => ['--import', i]), '--import', 'tsx', 'src/cli/main.ts', ...args],
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

/** Runs sink `name` over `source` into the test's database until it has applied what the source holds. */
async function runSink(
  name: string,
  source: Source | ReturnType<typeof real.rabbit.superStreamSource>,
) {
  const sink = databaseSink<{ n: number }>({
    name,
    source,
    database: postgres(database.pool()),
    maxBatchDelayMs: 0,
    into: eachBatch<{ n: number }>({
      apply: async (tx, batch) => {
        for (const m of batch.messages) {
          await tx.query('INSERT INTO applied (sink, n) VALUES ($1, $2)', [name, m.value.n]);
        }
      },
    }),
  });
  await sink.run({ untilCaughtUp: true });
}

const numbers = (from: number, count: number) =>
  Array.from({ length: count }, (_, i) => jsonMessage({ n: from + i }));

beforeAll(async () => {
  await database.query('CREATE TABLE applied (sink text NOT NULL, n integer NOT NULL)');
});

describe('stream-windows status --sink', () => {
  it("should report a sink's checkpoint and lag in messages and time, as a table and as JSON", async () => {
    const stream = await real.newStream('sink-status');
    await publishAll(real.rabbit, stream, numbers(0, 10));
    await runSink('billing', real.rabbit.source(stream));
    // Written after the sink stopped: two writes a second and a half apart, so the chunk
    // holding the resume point and the last chunk are that far apart in broker time.
    await publishAll(real.rabbit, stream, numbers(10, 5));
    await sleep(1_500);
    await publishAll(real.rabbit, stream, numbers(15, 5));

    const args = ['status', '--sink', 'billing', '--source', stream];
    const json = await cli([...args, '--json', '--database', database.url]);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const status = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(status).toMatchObject({
      sink: 'billing',
      source: stream,
      checkpoint: '9',
      resumeFrom: '10',
      sourceEnd: '20',
      lagMessages: '10',
    });
    expect(status['lagMs']).toBeGreaterThanOrEqual(1_000);
    expect(status['lagMs']).toBe(
      (status['lastChunkTime'] as number) - (status['resumeChunkTime'] as number),
    );

    // The database from DATABASE_URL, named without its password (user@host).
    const table = await cli(args, { DATABASE_URL: database.url });
    expect(table.code).toBe(0);
    const [header, row, chunks, read] = table.stdout.trimEnd().split('\n');
    expect(header?.split(/\s{2,}/)).toEqual([
      'SINK',
      'SOURCE',
      'CHECKPOINT',
      'RESUME AT',
      'SOURCE END',
      'LAG',
      'LAG TIME',
    ]);
    expect(row?.split(/\s{2,}/).slice(0, 6)).toEqual(['billing', stream, '9', '10', '20', '10']);
    expect(chunks).toMatch(new RegExp(`^${stream}: resume point's chunk written \\d{4}-`));
    const url = new URL(database.url);
    expect(read).toBe(
      `checkpoints: table stream_windows_checkpoints of postgres://${url.username}@${url.host}${url.pathname}`,
    );
  });

  it('should report one row per partition of a super stream, and a sink that never ran', async () => {
    const superStream = `sink-status-super-${Date.now()}`;
    const partitions = await real.rabbit.createSuperStream(superStream, { partitions: 2 });
    onTestFinished(() => real.rabbit.deleteSuperStream(superStream));
    const [first, second] = partitions as [string, string];
    await publishAll(real.rabbit, first, numbers(0, 3));
    await publishAll(real.rabbit, second, numbers(0, 4));
    await runSink('per-partition', real.rabbit.superStreamSource(superStream));
    await publishAll(real.rabbit, second, numbers(4, 2));

    const args = ['status', '--super-stream', superStream, '--database', database.url];
    const json = await cli([...args, '--sink', 'per-partition', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject([
      {
        source: first,
        checkpoint: '2',
        resumeFrom: '3',
        sourceEnd: '3',
        lagMessages: '0',
        lagMs: 0,
      },
      { source: second, checkpoint: '3', resumeFrom: '4', sourceEnd: '6', lagMessages: '2' },
    ]);

    const unknown = await cli([...args, '--sink', 'per-partiton']);
    expect(unknown.code).toBe(0);
    const lines = unknown.stdout.split('\n');
    expect(lines.slice(1, 3).map((line) => line.split(/\s{2,}/).slice(1, 6))).toEqual([
      [first, 'none', 'first', '3', '3'],
      [second, 'none', 'first', '6', '6'],
    ]);
    expect(lines[3]).toBe(
      `sink 'per-partiton' has no checkpoint on any partition of ${superStream} in ` +
        'stream_windows_checkpoints: it has applied nothing there and would start at the first ' +
        'offset (a new sink, or a misspelt sink or stream name?)',
    );
  });

  it('should exit 1 naming a checkpoint table that does not exist', async () => {
    const stream = await real.newStream('sink-status-table');
    const run = await cli([
      'status',
      '--sink',
      'billing',
      '--source',
      stream,
      '--database',
      database.url,
      '--checkpoint-table',
      'checkpoints_elsewhere',
    ]);
    const url = new URL(database.url);
    url.password = '';
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        `stream-windows: database ${url.toString()} has no checkpoint table ` +
        "'checkpoints_elsewhere': no sink has run on it, or the sink names another " +
        '(--checkpoint-table)\n',
    });
  });

  it('should exit 1 naming an unreachable database by its host, without the password', async () => {
    const stream = await real.newStream('sink-status-down');
    const run = await cli([
      'status',
      '--sink',
      'billing',
      '--source',
      stream,
      '--database',
      'postgres://someone:s3cret-pw@127.0.0.1:1/billing?password=s3cret-pw',
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^stream-windows: could not read the checkpoints from database postgres:\/\/someone@127\.0\.0\.1:1\/billing: .*ECONNREFUSED/,
    );
    expect(run.stderr).not.toContain('s3cret-pw');
  });

  it('should exit 1 saying to install pg where it is not, and need it for nothing else', async () => {
    const withoutPg = ['./test/support/children/without-pg.mjs'];
    const run = await cli(
      ['status', '--sink', 'billing', '--source', 'any', '--database', database.url],
      {},
      withoutPg,
    );
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        "stream-windows: status --sink reads the sink's checkpoints from PostgreSQL with the " +
        "'pg' package, an optional peer dependency of stream-windows, which is not installed: " +
        'npm install pg\n',
    });
    // A job's status runs without pg.
    const stream = await real.newStream('sink-status-no-pg');
    const job = await cli(
      ['status', '--source', stream, '--target', stream, '--producer', 'p', '--json'],
      {},
      withoutPg,
    );
    expect(job.stderr).toBe('');
    expect(job.code).toBe(0);
  });
});
