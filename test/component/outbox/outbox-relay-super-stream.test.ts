// The outbox relay to a super stream, on PGlite and the embedded broker: each row goes to the
// partition its key routes to (as the broker's route, the RabbitMQ clients' hash), each key's
// rows in commit order in one partition, each row once; a partition failing while the others
// take later rows, then a restart, loses and duplicates nothing; a partition that gets no row
// holds neither the resume point nor pruning back; a resume point that fell behind what prune
// deleted (two relays of one name, cut apart) resumes from the table's first row.
import { describe, expect, it } from 'vitest';
import { ConfigError, RelayError } from '../../../src/common/errors.js';
import type { Logger } from '../../../src/common/logger.js';
import type { SinkDatabase } from '../../../src/database/sink-database.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import type { FaultPoint } from '../../../src/memory/errors.js';
import { pglite } from '../../../src/pglite/index.js';
import { OutboxRelay } from '../../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../../src/outbox/outbox-table.js';
import { relayPublishingId } from '../../../src/outbox/relay-publishing-id.js';
import type { RelayBroker } from '../../../src/outbox/relay-destination.js';
import type { RelayEventMap } from '../../../src/outbox/relay-events.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import {
  expectExactlyOnPartitions,
  keysRoutedTo,
  seenOutboxMessage,
  until,
  type CommittedRow,
  type SeenOutboxMessage,
  writeOnPglite,
} from '../../support/jobs/outbox-fixture.js';
import { bound } from '../../support/timing.js';

const db = pgliteForTests();

let fixtures = 0;
/** A fresh table, super stream and broker for one test. */
async function fresh(partitions = 3): Promise<{
  table: string;
  superStream: string;
  streams: string[];
  broker: MemoryBroker;
  relay: (options?: {
    maxBatchRows?: number;
    on?: RelayBroker;
    database?: SinkDatabase;
    logger?: Logger;
  }) => OutboxRelay;
  seen: (stream: string) => SeenOutboxMessage[];
  write: (keys: readonly string[], rollback?: boolean) => Promise<CommittedRow[]>;
  count: () => Promise<number>;
  expectExact: (committed: readonly CommittedRow[]) => void;
}> {
  fixtures++;
  const table = `outbox_s${fixtures}`;
  const superStream = `orders-${fixtures}`;
  const broker = new MemoryBroker();
  const streams = broker.createSuperStream(superStream, { partitions });
  await createOutboxTable(pglite(db), table);
  let n = 0;
  const seen = (stream: string): SeenOutboxMessage[] =>
    broker.messages(stream).map((message) => seenOutboxMessage(message.bytes));
  return {
    table,
    superStream,
    streams,
    broker,
    relay: ({ maxBatchRows = 500, on = broker, database = pglite(db), logger } = {}) =>
      new OutboxRelay({
        name: 'relay',
        database,
        table,
        broker: on,
        toSuperStream: superStream,
        maxBatchRows,
        pollIntervalMs: 5,
        retryDelayMs: 1,
        warnAfterRetries: Infinity,
        ...(logger === undefined ? {} : { logger }),
      }),
    seen,
    write: (keys, rollback = false) =>
      writeOnPglite(
        db,
        table,
        keys.map((key) => ({ key, json: `${key}-${n++}` })),
        rollback,
      ),
    count: async () =>
      Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n),
    expectExact: (committed) => {
      expectExactlyOnPartitions(streams.map(seen), committed);
    },
  };
}

describe('outbox relay to a super stream (PGlite, embedded broker)', () => {
  it(
    "routes each row to its key's partition, each key's rows in order there, each row once; every message records where the relay stood",
    async () => {
      const f = await fresh();
      const keys = [0, 1, 2].flatMap((partition) => keysRoutedTo(partition, 3, 2));
      const committed: CommittedRow[] = [];
      committed.push(...(await f.write(keys)));
      committed.push(...(await f.write([keys[0], keys[3], keys[0], keys[5]] as string[])));
      expect(await f.write(keys, true)).toEqual([]);
      committed.push(...(await f.write([keys[4], keys[1], keys[2]] as string[])));
      const relay = f.relay({ maxBatchRows: 4 });
      const published: RelayEventMap['published'][] = [];
      relay.on('published', (event) => published.push(event));
      expect((await relay.run({ untilCaughtUp: true })).published).toBe(13);
      expect(published.map((event) => event.rows)).toEqual([4, 4, 4, 1]);
      f.expectExact(committed);
      expect(f.streams.every((stream) => f.seen(stream).length > 0)).toBe(true);
      // Where the broker routes each key (as the RabbitMQ clients do).
      for (const key of keys) {
        const stream = f.broker.route(f.superStream, key);
        expect(f.seen(stream).some((message) => message.key === key)).toBe(true);
      }

      // Each message: the relay's name, its own publishing id (row `index` of its transaction),
      // and the last row of the batch before its own, confirmed everywhere (0 in the first).
      const all = f.streams.flatMap((stream) => f.seen(stream));
      const publishingIdOf = (message: SeenOutboxMessage): bigint => {
        const before = all.filter((m) => m.txid === message.txid && m.id < message.id);
        return relayPublishingId({ txid: message.txid, index: before.length });
      };
      const batchOf = (id: bigint): number =>
        published.findIndex((event) => event.firstRowId <= id && id <= event.lastRowId);
      for (const message of all) {
        const batch = batchOf(message.id);
        expect(message.mark).toEqual({
          producer: 'relay',
          publishingId: publishingIdOf(message),
          through: batch === 0 ? 0n : published[batch - 1]?.lastPublishingId,
        });
      }
      // A frame is one chunk: its writer's id is its last message's.
      for (const stream of f.streams) {
        for (const chunk of f.broker.chunks(stream)) {
          const last = seenOutboxMessage((chunk.messages.at(-1) as { bytes: Uint8Array }).bytes);
          expect(chunk.writer?.publishingId).toBe(last.mark?.publishingId);
        }
      }

      // Caught up: nothing is left, whatever the partitions' last messages record.
      const backlog = await relay.backlog();
      expect(backlog).toMatchObject({ stream: f.superStream, rows: 0n });
      expect(backlog.position?.rowId).toBe(committed.at(-1)?.id);
      expect(backlog.partitions?.map((partition) => partition.stream)).toEqual(f.streams);
      expect((await relay.run({ untilCaughtUp: true })).published).toBe(0);
      await relay.close();
    },
    bound(30_000),
  );

  it.each<FaultPoint>([
    'before-publish',
    'after-publish',
    'after-confirm',
    'lose-confirm',
    'refuse-publish',
  ])(
    "one partition failing at '%s' while the others take later rows, then a restart: each row once",
    async (point) => {
      const f = await fresh();
      const keys = [0, 1, 2].flatMap((partition) => keysRoutedTo(partition, 3, 2));
      const committed: CommittedRow[] = [];
      for (let t = 0; t < 6; t++) committed.push(...(await f.write(keys)));
      // Batches of 12 rows, 4 to each partition: the 6th message to partition 1 is the 2nd of
      // its frame in batch 2, sent before partition 2's frame of that batch.
      const fault = f.broker.injectFault({
        stream: f.streams[1] as string,
        producer: 'relay',
        atPublish: 6,
        point,
      });
      const crashed = f.relay({ maxBatchRows: 12 });
      const outcome = await crashed.run({ untilCaughtUp: true }).then(
        (summary) => summary,
        (error: unknown) => error,
      );
      expect(fault.fired).toBe(true);
      await crashed.close();
      if (point === 'lose-confirm' || point === 'refuse-publish') {
        // Retriable: the run resumed itself from where the partitions stand.
        expect(outcome).toMatchObject({ retries: 1 });
      } else {
        expect(outcome).toBeInstanceOf(RelayError);
        expect((outcome as RelayError).message).toContain(f.streams[1]);
        // The trap: partition 2 holds a later row than one partition 1 lost.
        const held = f.streams.flatMap((stream) => f.seen(stream).map((m) => m.id));
        const lost = committed.filter((row) => !held.includes(row.id)).map((row) => row.id);
        const lastHeld = held.reduce((a, b) => (a > b ? a : b));
        expect(lost.some((id) => id < lastHeld)).toBe(true);
        const restarted = f.relay({ maxBatchRows: 12 });
        const started: RelayEventMap['started'][] = [];
        restarted.on('started', (event) => started.push(event));
        await restarted.run({ untilCaughtUp: true });
        // It resumed before the first row lost, not after the highest row held.
        const from = started[0]?.from?.rowId ?? 0n;
        expect(lost.every((id) => id > from)).toBe(true);
        await restarted.close();
      }
      f.expectExact(committed);
    },
    bound(30_000),
  );

  it(
    'a partition that gets no row holds neither the resume point nor pruning back; the backlog counts only rows not on the partitions',
    async () => {
      const f = await fresh();
      const [idle] = keysRoutedTo(2, 3, 1) as [string];
      const busy = [...keysRoutedTo(0, 3, 1), ...keysRoutedTo(1, 3, 1)];
      const committed = await f.write([idle, busy[0] as string]);
      for (let t = 0; t < 9; t++) committed.push(...(await f.write(busy)));
      const relay = f.relay({ maxBatchRows: 2 });
      /** The resume point: the highest record among the partitions' last messages. */
      const resumePoint = async (): Promise<bigint> =>
        ((await relay.backlog()).partitions ?? []).reduce(
          (highest, { through = 0n }) => (through > highest ? through : highest),
          0n,
        );
      await relay.run({ untilCaughtUp: true });
      const idleLast = (await relay.backlog()).partitions?.[2];
      const first = await resumePoint();
      for (let t = 0; t < 3; t++) committed.push(...(await f.write(busy)));
      await relay.run({ untilCaughtUp: true });
      // It advanced, while the idle partition's last message still records nothing.
      const second = await resumePoint();
      expect(second).toBeGreaterThan(first);
      expect((await relay.backlog()).partitions?.[2]).toEqual(idleLast);
      expect(idleLast?.through).toBe(0n);
      // The resume point is the last row of the batch before the last (13 transactions of 2).
      expect(second).toBe(
        relayPublishingId({ txid: txidOf(f.seen, f.streams, committed[23]), index: 1 }),
      );

      // Exact although the partitions' records lag a batch: 3 rows are not on the super stream.
      committed.push(...(await f.write([busy[0] as string, busy[1] as string, busy[0] as string])));
      const backlog = await relay.backlog();
      expect(backlog.rows).toBe(3n);
      expect(backlog.position?.rowId).toBe(committed[25]?.id);

      // Pruning keeps the resume point's transaction and after it: 2 of 13 transactions.
      expect(await relay.prune()).toBe(22);
      expect(await f.count()).toBe(7);
      await relay.run({ untilCaughtUp: true });
      f.expectExact(committed);
      await relay.close();
    },
    bound(30_000),
  );

  it(
    'a resume point that fell behind what prune deleted (two relays of one name, their batches cut apart) resumes from the first row left',
    async () => {
      const f = await fresh(1);
      const [key] = keysRoutedTo(0, 1, 1) as [string];
      const committed: CommittedRow[] = [];
      for (let t = 0; t < 5; t++) committed.push(...(await f.write([key])));
      const [, r2] = committed as [CommittedRow, CommittedRow];
      // Relay A, a row per batch, publishes r1 and r2.
      const a = f.relay({ maxBatchRows: 1 });
      const stopA = new AbortController();
      a.on('published', (event) => {
        if (event.lastRowId === r2.id) stopA.abort();
      });
      await a.run({ untilCaughtUp: true, signal: stopA.signal });
      // Relay B, of the same name on another connection, starts there (it holds all to r2),
      // and its next read waits.
      let gate: Promise<void> | undefined;
      let open = (): void => {};
      const base = pglite(db);
      const held: SinkDatabase = {
        ...base,
        transaction: async (work) => {
          await gate;
          return base.transaction(work);
        },
      };
      const other: RelayBroker = {
        target: (stream, options) => f.broker.target(stream, { ...options, connection: 'b' }),
        partitions: (name) => f.broker.partitions(name),
      };
      const b = f.relay({ maxBatchRows: 100, on: other, database: held });
      const bStarted: RelayEventMap['started'][] = [];
      b.on('started', (event) => {
        bStarted.push(event);
        gate = new Promise((resolve) => (open = resolve));
      });
      const bRun = b.run({ untilCaughtUp: true });
      await until(() => bStarted.length === 1, bound(10_000), "relay B's start");
      expect(bStarted[0]?.from?.rowId).toBe(r2.id);
      // A publishes the rest; prune deletes up to its resume point, r4's transaction.
      await a.run({ untilCaughtUp: true });
      expect(await a.prune()).toBe(3);
      committed.push(...(await f.write([key])));
      // B sends r4 to r6 recording r2: r6 is stored, and the partition's last record is r2.
      open();
      await bRun;
      const last = f.seen(f.streams[0] as string).at(-1);
      expect(last?.id).toBe(committed[5]?.id);
      expect(last?.mark?.through).toBe(
        relayPublishingId({ txid: txidOf(f.seen, f.streams, r2), index: 0 }),
      );
      // r2 is gone, and so is every row before r4: a new start resumes from r4 on.
      const restarted = f.relay();
      const started: RelayEventMap['started'][] = [];
      restarted.on('started', (event) => started.push(event));
      committed.push(...(await f.write([key])));
      expect((await restarted.run({ untilCaughtUp: true })).published).toBe(1);
      expect(started[0]?.from?.rowId).toBe(committed[5]?.id);
      f.expectExact(committed);
      for (const relay of [a, b, restarted]) await relay.close();
    },
    bound(30_000),
  );

  it(
    "a partition whose last message retention removed tells nothing: the relay resumes from the others' and warns naming it",
    async () => {
      const f = await fresh(2);
      const keys = [...keysRoutedTo(0, 2, 1), ...keysRoutedTo(1, 2, 1)];
      const committed: CommittedRow[] = [];
      for (let t = 0; t < 4; t++) committed.push(...(await f.write(keys)));
      const relay = f.relay({ maxBatchRows: 2 });
      await relay.run({ untilCaughtUp: true });
      await relay.close();
      const gone = f.streams[1] as string;
      f.broker.truncate(gone, BigInt(f.seen(gone).length));
      expect(f.seen(gone)).toEqual([]);
      const later = await f.write(keys);
      const warnings: string[] = [];
      const logger: Logger = {
        debug: () => undefined,
        info: () => undefined,
        warn: (_fields: object, message?: string) => warnings.push(message ?? ''),
        error: () => undefined,
      };
      const restarted = f.relay({ maxBatchRows: 2, logger });
      expect((await restarted.run({ untilCaughtUp: true })).published).toBe(2);
      expect(warnings.some((warning) => warning.includes(`partition '${gone}'`))).toBe(true);
      expect(f.seen(gone).map((message) => message.id)).toEqual([later[1]?.id]);
      // Partition 1 holds the row written since, and nothing older (retention took it).
      f.expectExact([...committed.filter((row) => row.key === keys[0]), ...later]);
      await restarted.close();
    },
    bound(30_000),
  );

  it('refuses to and toSuperStream together or neither, and a broker without partitions', () => {
    const broker = new MemoryBroker();
    const base = { name: 'relay', database: pglite(db), broker };
    expect(() => new OutboxRelay({ ...base, to: 's', toSuperStream: 'ss' })).toThrow(ConfigError);
    expect(() => new OutboxRelay(base)).toThrow(/exactly one of to/);
    expect(() => new OutboxRelay({ ...base, toSuperStream: '' })).toThrow(ConfigError);
    const streamOnly: RelayBroker = { target: (stream, options) => broker.target(stream, options) };
    expect(() => new OutboxRelay({ ...base, broker: streamOnly, toSuperStream: 'ss' })).toThrow(
      /partitions/,
    );
  });
});

/** The transaction id of `row`, as the partition it went to shows. */
function txidOf(
  seen: (stream: string) => SeenOutboxMessage[],
  streams: readonly string[],
  row: CommittedRow | undefined,
): bigint {
  const message = streams.flatMap(seen).find((m) => m.id === row?.id);
  if (message === undefined) throw new Error(`row ${row?.id} is on no partition`);
  return message.txid;
}
