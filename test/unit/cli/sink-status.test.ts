// `stream-windows status --sink`: its command line (checked before anything connects), the
// figures of sinkStatus over a real sink's checkpoints (the embedded broker and PGlite, chunk
// times set by the test) and the table they make.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sinkStatus, type SinkStatus } from '../../../src/cli/index.js';
import { sinkStatusLines } from '../../../src/cli/sink-status-command.js';
import { styleFor } from '../../../src/cli/style.js';
import { databaseSink, eachBatch, jsonMessage } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { runRecorded } from '../../support/clients/cli-run.js';
import { startPglite } from '../../support/jobs/sink-fixture.js';
import { bound } from '../../support/timing.js';

const T0 = Date.UTC(2026, 0, 1);

let db: PGlite;
beforeAll(async () => {
  db = await startPglite();
}, bound(60_000));
afterAll(async () => {
  await db.close();
});

describe('status --sink, its command line', () => {
  const usage = (reason: string) => ({
    code: 2,
    stdout: '',
    stderr: `stream-windows: ${reason}\nRun 'stream-windows help status' for usage.\n`,
  });
  const db = ['--database', 'postgres://u:secret@db.example:5432/app'];

  it('should exit 2 with the reason on stderr for every wrong combination', async () => {
    const cases: [string[], string][] = [
      [
        ['--sink', 'b', '--source', 's', '--target', 't', ...db],
        "status --sink takes --source or --super-stream, not a job's --target",
      ],
      [
        ['--sink', 'b', '--super-stream', 's', '--job', 'j', '--producer', 'p', ...db],
        "status --sink takes --source or --super-stream, not a job's --producer, --job",
      ],
      [['--sink', 'b', ...db], 'status --sink takes one of --source and --super-stream'],
      [
        ['--sink', 'b', '--source', 's', '--super-stream', 'x', ...db],
        'status --sink takes one of --source and --super-stream',
      ],
      [['--sink', '', '--source', 's', ...db], 'status needs --sink'],
      [['--sink', 'b', '--source', '', ...db], 'status needs --source'],
      [
        ['--sink', 'b', '--source', 's'],
        "status --sink needs --database postgres://... or DATABASE_URL set: the database holding the sink's checkpoints",
      ],
      [
        ['--sink', 'b', '--source', 's', '--database', 'mysql://h/app'],
        '--database must be a postgres:// or postgresql:// URL, given mysql://...',
      ],
      [
        ['--sink', 'b', '--source', 's', '--database', 'db.example'],
        '--database is not a URL such as postgres://user@host:port/database (with a password: user:password@host)',
      ],
      [
        ['--sink', 'b', '--source', 's', '--checkpoint-table', 'a.b.c', ...db],
        "--checkpoint-table must be 'table' or 'schema.table', given: 'a.b.c'",
      ],
      [
        ['--source', 's', '--target', 't', '--producer', 'p', ...db],
        'status takes --database with --sink or --relay only',
      ],
      [
        ['--source', 's', '--target', 't', '--producer', 'p', '--checkpoint-table', 'c', ...db],
        'status takes --database with --sink or --relay only, --checkpoint-table with --sink only',
      ],
    ];
    for (const [args, reason] of cases) {
      expect(await runRecorded(['status', ...args])).toEqual(usage(reason));
    }
  });

  it('should take the database from DATABASE_URL, checked as --database is', async () => {
    expect(
      await runRecorded(['status', '--sink', 'b', '--source', 's'], { DATABASE_URL: 'redis://h/' }),
    ).toEqual(usage('DATABASE_URL must be a postgres:// or postgresql:// URL, given redis://...'));
  });

  it('should list --sink, --database and DATABASE_URL in its help', async () => {
    const help = (await runRecorded(['help', 'status'])).stdout;
    expect(help).toContain('stream-windows status --sink NAME (--source S | --super-stream S)');
    expect(help).toContain('--database URL    With --sink');
    expect((await runRecorded(['--help'])).stdout).toContain('DATABASE_URL');
  });
});

describe('sinkStatus', () => {
  /** 'source': chunks of four messages written at T0, T0 + 2 s and T0 + 7 s. */
  function brokerWithChunks(): MemoryBroker {
    const broker = new MemoryBroker({ now: () => T0 });
    broker.createStream('source');
    for (const [chunk, at] of [0, 2_000, 7_000].entries()) {
      const messages = Array.from({ length: 4 }, (_, i) => jsonMessage({ n: 4 * chunk + i }));
      broker.append('source', messages, { timestamp: T0 + at });
    }
    return broker;
  }

  it("should read a sink's checkpoint as the sink does and measure its lag as a job's", async () => {
    const broker = new MemoryBroker({ now: () => T0 });
    broker.createStream('source');
    const append = (chunk: number, at: number) =>
      broker.append(
        'source',
        Array.from({ length: 4 }, (_, i) => jsonMessage({ n: 4 * chunk + i })),
        { timestamp: T0 + at },
      );
    append(0, 0);
    append(1, 2_000);
    const sink = databaseSink({
      name: 'counted',
      source: broker.source('source'),
      database: pglite(db),
      into: eachBatch({ apply: () => Promise.resolve() }),
    });
    await sink.run({ untilCaughtUp: true });
    append(2, 7_000);
    append(3, 9_000);

    const [status] = await sinkStatus(pglite(db), 'counted', [broker.source('source')]);
    expect(status).toEqual({
      sink: 'counted',
      source: 'source',
      checkpoint: 7n,
      resumeFrom: 8n,
      sourceEnd: 16n,
      lagMessages: 8n,
      lagMs: 2_000,
      resumeChunkTime: T0 + 7_000,
      lastChunkTime: T0 + 9_000,
    });
    // One reading of the checkpoint: the sink's own positions() says the same.
    expect((await sink.positions())[0]).toMatchObject({ checkpoint: 7n, endOffset: 16n });
  });

  it("should show a sink that applied nothing as resuming at 'first', the whole stream behind", async () => {
    const broker = brokerWithChunks();
    const [status] = await sinkStatus(pglite(db), 'never-ran', [broker.source('source')]);
    expect(status).toEqual({
      sink: 'never-ran',
      source: 'source',
      checkpoint: -1n,
      resumeFrom: 'first',
      sourceEnd: 12n,
      lagMessages: 12n,
      lagMs: 7_000,
      resumeChunkTime: T0,
      lastChunkTime: T0 + 7_000,
    });
  });

  it('should fail with the database error naming a checkpoint table that does not exist', async () => {
    const broker = brokerWithChunks();
    await expect(
      sinkStatus(pglite(db), 'counted', [broker.source('source')], 'no_such_table'),
    ).rejects.toMatchObject({ code: '42P01' });
  });
});

describe('sinkStatusLines', () => {
  const status = (over: Partial<SinkStatus>): SinkStatus => ({
    sink: 'billing',
    source: 'totals',
    checkpoint: 41_999n,
    resumeFrom: 42_000n,
    sourceEnd: 45_310n,
    lagMessages: 3_310n,
    lagMs: 125_184,
    resumeChunkTime: T0,
    lastChunkTime: T0 + 125_184,
    ...over,
  });
  const read = {
    where: 'totals',
    checkpointTable: 'stream_windows_checkpoints',
    database: 'postgres://u@db.example:5432/app',
  };

  it('should print a row per stream, the chunk times of a lagging one and where it read', () => {
    expect(sinkStatusLines([status({})], read, styleFor(false))).toEqual([
      'SINK     SOURCE  CHECKPOINT  RESUME AT  SOURCE END  LAG   LAG TIME',
      'billing  totals  41999       42000      45310       3310  2m 05s',
      "totals: resume point's chunk written 2026-01-01T00:00:00.000Z, last chunk 2026-01-01T00:02:05.184Z",
      'checkpoints: table stream_windows_checkpoints of postgres://u@db.example:5432/app',
    ]);
  });

  it("should show 'none' and say so when the sink has no checkpoint on any stream", () => {
    const none = { checkpoint: -1n, resumeFrom: 'first' as const };
    const lines = sinkStatusLines(
      [status({ ...none, source: 'p-0' }), status({ ...none, source: 'p-1' })],
      { ...read, where: 'any partition of totals' },
      styleFor(false),
    );
    expect(lines[1]?.split(/\s+/).slice(0, 4)).toEqual(['billing', 'p-0', 'none', 'first']);
    expect(lines[3]).toBe(
      "sink 'billing' has no checkpoint on any partition of totals in stream_windows_checkpoints: " +
        'it has applied nothing there and would start at the first offset (a new sink, or a ' +
        'misspelt sink or stream name?)',
    );
    // One partition with a checkpoint: the sink is known, the other partition just 'none'.
    const mixed = sinkStatusLines(
      [status({}), status({ ...none, source: 'p-1' })],
      read,
      styleFor(false),
    );
    expect(mixed.join('\n')).not.toContain('has no checkpoint');
  });

  it('should colour a caught-up row green and a lagging one yellow', () => {
    const caughtUp = status({
      lagMessages: 0n,
      lagMs: 0,
      resumeChunkTime: undefined,
      lastChunkTime: undefined,
    });
    const [, green, yellow] = sinkStatusLines([caughtUp, status({})], read, styleFor(true));
    expect(green?.startsWith('\x1b[32m') && green.endsWith('\x1b[39m')).toBe(true);
    expect(yellow?.startsWith('\x1b[33m') && yellow.endsWith('\x1b[39m')).toBe(true);
  });
});
