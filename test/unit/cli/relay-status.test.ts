// `stream-windows status --relay`: its command line (checked before anything connects), the
// figures of relayStatus over a real relay's outbox (the embedded broker and PGlite), on a
// stream and on a super stream, and the table they make.
import { describe, expect, it } from 'vitest';
import { relayStatus, type RelayStatus } from '../../../src/cli/index.js';
import { relayStatusLines } from '../../../src/cli/relay-status-command.js';
import { styleFor } from '../../../src/cli/style.js';
import { RelayError } from '../../../src/common/errors.js';
import { createOutboxTable, outboxRelay } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { runRecorded } from '../../support/clients/cli-run.js';
import { closingRelayBroker } from '../../support/doubles/closing-relay-broker.js';
import { seenOutboxMessage, writeOnPglite } from '../../support/jobs/outbox-fixture.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import { bound } from '../../support/timing.js';

const db = pgliteForTests();

describe('status --relay, its command line', () => {
  const usage = (reason: string) => ({
    code: 2,
    stdout: '',
    stderr: `stream-windows: ${reason}\nRun 'stream-windows help status' for usage.\n`,
  });
  const db = ['--database', 'postgres://u:secret@db.example:5432/app'];

  it('should exit 2 with the reason on stderr for every wrong combination', async () => {
    const cases: [string[], string][] = [
      [
        ['--relay', 'r', '--stream', 's', '--source', 'x', ...db],
        "status --relay takes --stream or --super-stream, not a job's --source",
      ],
      [
        ['--relay', 'r', '--stream', 's', '--target', 't', '--producer', 'p', ...db],
        "status --relay takes --stream or --super-stream, not a job's --target, --producer",
      ],
      [
        ['--relay', 'r', '--stream', 's', '--checkpoint-table', 'c', ...db],
        'status takes --checkpoint-table with --sink only',
      ],
      [
        ['--relay', 'r', '--sink', 'b', '--stream', 's', ...db],
        'status takes one of --sink and --relay',
      ],
      [['--relay', 'r', ...db], 'status --relay takes one of --stream and --super-stream'],
      [
        ['--relay', 'r', '--stream', 's', '--super-stream', 's', ...db],
        'status --relay takes one of --stream and --super-stream',
      ],
      [['--relay', 'r', '--super-stream', '', ...db], 'status needs --super-stream'],
      [['--relay', '', '--stream', 's', ...db], 'status needs --relay'],
      [
        ['--relay', 'r', '--stream', 's'],
        "status --relay needs --database postgres://... or DATABASE_URL set: the database holding the relay's outbox table",
      ],
      [
        ['--relay', 'r', '--stream', 's', '--table', 'a.b.c', ...db],
        "--table must be 'table' or 'schema.table', given: 'a.b.c'",
      ],
      [
        ['--relay', 'r', '--stream', 's', '--database', 'mysql://h/app'],
        '--database must be a postgres:// or postgresql:// URL, given mysql://...',
      ],
      [
        ['--sink', 'b', '--source', 's', '--stream', 'x', '--table', 't', ...db],
        'status takes --stream and --table with --relay only',
      ],
      [
        ['--source', 's', '--target', 't', '--producer', 'p', '--stream', 'x'],
        'status takes --stream with --relay only',
      ],
    ];
    for (const [args, reason] of cases) {
      expect(await runRecorded(['status', ...args])).toEqual(usage(reason));
    }
  });

  it('should list --relay, --stream and --table in its help', async () => {
    const help = (await runRecorded(['help', 'status'])).stdout;
    expect(help).toContain(
      'stream-windows status --relay NAME (--stream S | --super-stream S) [--table T]',
    );
    expect(help).toContain('--table T         With --relay');
    expect((await runRecorded(['--help'])).stdout).toContain('status --sink or --relay');
  });
});

describe('relayStatus', () => {
  let tables = 0;
  /**
   * A fresh outbox table, and a stream 'orders' (or a super stream of three partitions) on a
   * broker of its own.
   */
  async function fresh(to: 'stream' | 'superStream' = 'stream') {
    const table = `status_outbox_${++tables}`;
    await createOutboxTable(pglite(db), table);
    const broker = new MemoryBroker();
    const destination = to === 'stream' ? { stream: 'orders' } : { superStream: 'orders' };
    if (to === 'stream') broker.createStream('orders');
    else broker.createSuperStream('orders', { partitions: 3 });
    const write = (keys: readonly string[], eventTime = Date.now()) =>
      writeOnPglite(
        db,
        table,
        keys.map((key) => ({ key, json: { key }, eventTime })),
        false,
      );
    const relay = outboxRelay({
      name: 'orders-relay',
      database: pglite(db),
      table,
      broker,
      ...(to === 'stream' ? { to: 'orders' } : { toSuperStream: 'orders' }),
      maxBatchRows: 2,
    });
    const status = () => relayStatus(pglite(db), broker, 'orders-relay', destination, table);
    return { table, broker, write, relay, status };
  }

  it("should read a relay's position and backlog as relay.backlog() does", async () => {
    const f = await fresh();
    await f.write(['a', 'b', 'a']);
    await f.relay.run({ untilCaughtUp: true });
    const minuteAgo = Date.now() - 60_000;
    await f.write(['b', 'c'], minuteAgo);

    const status = await f.status();
    const backlog = await f.relay.backlog();
    // The same reading but for the age, which grew between the two.
    expect(status).toEqual({
      relay: 'orders-relay',
      table: f.table,
      ...backlog,
      oldestAgeMs: expect.any(Number) as number,
    });
    expect(status.oldestAgeMs).toBeLessThanOrEqual(backlog.oldestAgeMs as number);
    expect(status.rows).toBe(2n);
    expect(status.position).toMatchObject({ index: 2 });
    expect(status.oldestAgeMs).toBeGreaterThanOrEqual(60_000);
    expect(status.oldestAgeMs).toBeLessThan(60_000 + bound(60_000));
    // The position is the stream's last message: the relay's third row, on the stream last.
    expect(f.broker.messages('orders')).toHaveLength(3);
    await f.relay.close();
  });

  it('should show a relay that published nothing with every committed row behind', async () => {
    const f = await fresh();
    await f.write(['a']);
    await f.write(['b']);
    expect(await f.status()).toEqual({
      relay: 'orders-relay',
      table: f.table,
      stream: 'orders',
      lastPublishingId: 0n,
      position: undefined,
      rows: 2n,
      oldestAgeMs: expect.any(Number) as number,
    });
  });

  it("should fail naming the stream's last row when the table does not hold it", async () => {
    const f = await fresh();
    await f.write(['a']);
    await f.relay.run({ untilCaughtUp: true });
    await db.exec(`DELETE FROM ${f.table}`);
    const failure = await f.status().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RelayError);
    expect(failure).toMatchObject({ relay: 'orders-relay', stream: 'orders', stage: 'resume' });
    expect((failure as RelayError).message).toMatch(
      /the stream's last row \(row 0 of transaction \d+/,
    );
    await f.relay.close();
  });

  it("should read each partition's standing and the resume point on a super stream", async () => {
    const f = await fresh('superStream');
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    await f.write(keys);
    await f.write(['h', 'i']);
    // Two rows a batch: the last messages record the batches before theirs.
    await f.relay.run({ untilCaughtUp: true });
    await f.write(['a', 'b', 'c'], Date.now() - 60_000);

    const status = await f.status();
    const backlog = await f.relay.backlog();
    expect(status).toEqual({
      relay: 'orders-relay',
      table: f.table,
      ...backlog,
      oldestAgeMs: expect.any(Number) as number,
    });
    expect(status.rows).toBe(3n);
    expect(status.oldestAgeMs).toBeGreaterThanOrEqual(60_000);
    const partitions = status.partitions ?? [];
    expect(partitions.map((partition) => partition.stream)).toEqual([
      'orders-0',
      'orders-1',
      'orders-2',
    ]);
    // Each partition's standing is what its last message records.
    const lastMarks = partitions.map(({ stream }) => {
      const last = f.broker.messages(stream).at(-1);
      return last === undefined ? undefined : seenOutboxMessage(last.bytes).mark;
    });
    expect(partitions).toEqual(
      partitions.map(({ stream }, i) => ({
        stream,
        lastPublishingId: lastMarks[i]?.publishingId ?? 0n,
        through: lastMarks[i]?.through ?? 0n,
      })),
    );
    const last = f.broker
      .messages('orders-0')
      .concat(f.broker.messages('orders-1'), f.broker.messages('orders-2'))
      .map((message) => seenOutboxMessage(message.bytes))
      .reduce((a, b) => (a.id > b.id ? a : b));
    expect(status.lastPublishingId).toBe(last.mark?.publishingId);
    // The resume point: the relay's last row (every partition holds every row up to it), past
    // what any partition's last message records (each its batch's predecessor).
    expect(status.position).toEqual({ txid: last.txid, index: 1, rowId: last.id });
    expect(partitions.every(({ through = 0n }) => through < status.lastPublishingId)).toBe(true);
    await f.relay.close();
  });

  it('should show a relay that published nothing on a super stream', async () => {
    const f = await fresh('superStream');
    await f.write(['a', 'b']);
    const status = await f.status();
    expect(status).toMatchObject({ lastPublishingId: 0n, position: undefined, rows: 2n });
    expect(status.partitions).toEqual(
      ['orders-0', 'orders-1', 'orders-2'].map((stream) => ({
        stream,
        lastPublishingId: 0n,
        through: 0n,
      })),
    );
  });

  it('should close every target it made, on a stream and on a super stream, and on a failure', async () => {
    for (const to of ['stream', 'superStream'] as const) {
      const f = await fresh(to);
      await f.write(['a']);
      const broker = closingRelayBroker(f.broker);
      const destination = to === 'stream' ? { stream: 'orders' } : { superStream: 'orders' };
      await relayStatus(pglite(db), broker, 'orders-relay', destination, f.table);
      await expect(
        relayStatus(pglite(db), broker, 'orders-relay', destination, 'no_such_outbox'),
      ).rejects.toMatchObject({ code: '42P01' });
      expect(broker.made).toHaveLength(to === 'stream' ? 2 : 6);
      expect(broker.open()).toEqual([]);
    }
  });

  it('should create nothing: a table that does not exist is the database error', async () => {
    const broker = new MemoryBroker();
    broker.createStream('orders');
    await expect(
      relayStatus(pglite(db), broker, 'r', { stream: 'orders' }, 'no_such_outbox'),
    ).rejects.toMatchObject({ code: '42P01' });
    const { rows } = await db.query(`SELECT to_regclass('no_such_outbox') AS t`);
    expect(rows).toEqual([{ t: null }]);
  });
});

describe('relayStatusLines', () => {
  const status = (over: Partial<RelayStatus>): RelayStatus => ({
    relay: 'orders-relay',
    table: 'stream_windows_outbox',
    stream: 'orders',
    lastPublishingId: 805_306_368_002n,
    position: { txid: 768_000n, index: 2, rowId: 1_042n },
    rows: 118n,
    oldestAgeMs: 100_000,
    ...over,
  });
  const database = 'postgres://u@db.example:5432/app';

  it('should print the position, the rows behind, their age and where it read', () => {
    expect(relayStatusLines(status({}), database, styleFor(false))).toEqual([
      'RELAY         STREAM  LAST ID       TXID    ROW ID  BEHIND  OLDEST',
      'orders-relay  orders  805306368002  768000  1042    118     1m 40s',
      'outbox: table stream_windows_outbox of postgres://u@db.example:5432/app',
    ]);
  });

  it("should show 'none' and say so when the relay has published nothing", () => {
    const lines = relayStatusLines(
      status({ lastPublishingId: 0n, position: undefined }),
      database,
      styleFor(false),
    );
    expect(lines[1]?.split(/\s{2,}/)).toEqual([
      'orders-relay',
      'orders',
      'none',
      '-',
      '-',
      '118',
      '1m 40s',
    ]);
    expect(lines[2]).toBe(
      "relay 'orders-relay' has published nothing on orders: it would start at the first row " +
        'of stream_windows_outbox (a new relay, or a misspelt relay or stream name?)',
    );
  });

  it("should show a super stream's resume point and each partition's standing", () => {
    const lines = relayStatusLines(
      status({
        lastPublishingId: 805_306_368_005n,
        partitions: [
          { stream: 'orders-0', lastPublishingId: 805_306_368_005n, through: 805_306_368_001n },
          { stream: 'orders-1', lastPublishingId: 0n, through: 0n },
          { stream: 'orders-2', lastPublishingId: 805_306_368_002n, through: undefined },
        ],
      }),
      database,
      styleFor(false),
    );
    expect(lines).toEqual([
      'RELAY         SUPER STREAM  THROUGH       TXID    ROW ID  BEHIND  OLDEST',
      'orders-relay  orders        805306368002  768000  1042    118     1m 40s',
      'PARTITION  LAST ID       THROUGH',
      'orders-0   805306368005  805306368001',
      'orders-1   none          -',
      'orders-2   805306368002  removed',
      "the relay's last message on orders-2 (publishing id 805306368002) is not on it any more " +
        '(retention?): the other partitions tell where the relay resumes',
      'outbox: table stream_windows_outbox of postgres://u@db.example:5432/app',
    ]);
  });

  it('should say so when the relay has published nothing on a super stream', () => {
    const nothing = { stream: 'orders-0', lastPublishingId: 0n, through: 0n };
    const lines = relayStatusLines(
      status({ lastPublishingId: 0n, position: undefined, partitions: [nothing] }),
      database,
      styleFor(false),
    );
    expect(lines.slice(1)).toEqual([
      'orders-relay  orders        none     -     -       118     1m 40s',
      'PARTITION  LAST ID  THROUGH',
      'orders-0   none     -',
      "relay 'orders-relay' has published nothing on super stream orders: it would start at " +
        'the first row of stream_windows_outbox (a new relay, or a misspelt relay or stream name?)',
      'outbox: table stream_windows_outbox of postgres://u@db.example:5432/app',
    ]);
  });

  it('should colour a caught-up relay green and one behind yellow', () => {
    const caughtUp = status({ rows: 0n, oldestAgeMs: undefined });
    const [, green] = relayStatusLines(caughtUp, database, styleFor(true));
    const [, yellow] = relayStatusLines(status({}), database, styleFor(true));
    expect(green?.startsWith('\x1b[32m') && green.endsWith('\x1b[39m')).toBe(true);
    expect(green).toContain(' -');
    expect(yellow?.startsWith('\x1b[33m') && yellow.endsWith('\x1b[39m')).toBe(true);
  });
});
