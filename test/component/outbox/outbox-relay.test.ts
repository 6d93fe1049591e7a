// The outbox relay on PGlite and the embedded broker: rows written in the callers'
// transactions reach the stream once each, in (txid, id) order, with their bytes and
// properties; rolled-back rows never; restarts, crashes between publish and confirm and
// pruning lose and duplicate nothing; bad input and rows that cannot be published are refused.
import { decode as decodeMsgpack } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { ConfigError, RelayError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { OutboxRelay } from '../../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../../src/outbox/outbox-table.js';
import type { OutboxEvent } from '../../../src/outbox/outbox-event.js';
import { writeOutbox } from '../../../src/outbox/outbox-write.js';
import { relayPublishingId } from '../../../src/outbox/relay-publishing-id.js';
import type { RelayEventMap } from '../../../src/outbox/relay-events.js';
import type { FaultPoint } from '../../../src/memory/errors.js';
import { closingRelayBroker } from '../../support/doubles/closing-relay-broker.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import {
  expectExactlyCommitted,
  seenOutboxMessage,
  type CommittedRow,
  type SeenOutboxMessage,
  writeOnPglite,
} from '../../support/jobs/outbox-fixture.js';
import { BAD_OUTBOX_EVENTS } from '../../support/jobs/outbox-events.js';
import { bound } from '../../support/timing.js';

const db = pgliteForTests();

let fixtures = 0;
/** A fresh table, stream and broker for one test. */
async function fresh(frameMax?: number): Promise<{
  table: string;
  stream: string;
  broker: MemoryBroker;
  relay: (options?: { maxBatchRows?: number; name?: string }) => OutboxRelay;
  seen: () => SeenOutboxMessage[];
  write: (events: readonly OutboxEvent[], rollback?: boolean) => Promise<CommittedRow[]>;
  count: () => Promise<number>;
}> {
  fixtures++;
  const table = `outbox_${fixtures}`;
  const stream = `outbox-${fixtures}`;
  const broker = new MemoryBroker(frameMax === undefined ? {} : { frameMax });
  broker.createStream(stream);
  await createOutboxTable(pglite(db), table);
  return {
    table,
    stream,
    broker,
    relay: ({ maxBatchRows = 500, name = 'relay' } = {}) =>
      new OutboxRelay({
        name,
        database: pglite(db),
        table,
        broker,
        to: stream,
        maxBatchRows,
        pollIntervalMs: 5,
        retryDelayMs: 1,
      }),
    seen: () => broker.messages(stream).map((message) => seenOutboxMessage(message.bytes)),
    write: (events, rollback = false) => writeOnPglite(db, table, events, rollback),
    count: async () =>
      Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]?.n),
  };
}

const json = (key: string, n: number): OutboxEvent => ({ key, json: { n } });

describe('outbox relay on PGlite and the embedded broker', () => {
  it(
    'publishes each committed row once, in (txid, id) order, with its bytes and properties; rolled-back rows never',
    async () => {
      const f = await fresh();
      const first = await f.write([
        { key: 'k1', json: { a: 1, s: 'é' }, eventTime: 1_000, headers: { tenant: 't1' } },
        { key: 'k2', msgpack: { b: [1, 2], c: 'x' }, eventTime: new Date(2_000) },
        {
          key: 'k1',
          bytes: Uint8Array.from([0, 1, 2, 255]),
          contentType: 'application/x-test',
          eventTime: 3_000,
        },
        { key: 'k3', bytes: Uint8Array.from([7]), eventTime: 4_000 },
      ]);
      expect(await f.write([json('k1', 99), json('k9', 98)], true)).toEqual([]);
      const second = await f.write([{ key: 'k2', json: 'two', eventTime: 5_000 }]);
      const relay = f.relay({ maxBatchRows: 2 });
      const published: RelayEventMap['published'][] = [];
      relay.on('published', (event) => published.push(event));
      const summary = await relay.run({ untilCaughtUp: true });
      expect(summary.published).toBe(5);
      expect(published.map((e) => e.rows)).toEqual([2, 2, 1]);

      const seen = f.seen();
      expect(seen.map((m) => m.id)).toEqual([...first, ...second].map((row) => row.id));
      // On a stream, the row's message alone: no super stream record.
      expect(seen.every((m) => m.mark === undefined)).toBe(true);
      expect(new Set(seen.slice(0, 4).map((m) => m.txid)).size).toBe(1);
      expect((seen[4] as SeenOutboxMessage).txid).toBeGreaterThan(
        (seen[0] as SeenOutboxMessage).txid,
      );
      const [m0, m1, m2, m3, m4] = seen as [
        SeenOutboxMessage,
        SeenOutboxMessage,
        SeenOutboxMessage,
        SeenOutboxMessage,
        SeenOutboxMessage,
      ];
      expect(m0).toMatchObject({
        key: 'k1',
        contentType: 'application/json',
        creationTime: 1_000,
        headers: { tenant: 't1' },
      });
      expect(JSON.parse(m0.body.toString('utf8'))).toEqual({ a: 1, s: 'é' });
      expect(m1).toMatchObject({
        key: 'k2',
        contentType: 'application/msgpack',
        creationTime: 2_000,
        headers: {},
      });
      expect(decodeMsgpack(m1.body)).toEqual({ b: [1, 2], c: 'x' });
      expect(m2).toMatchObject({
        key: 'k1',
        contentType: 'application/x-test',
        creationTime: 3_000,
      });
      expect([...m2.body]).toEqual([0, 1, 2, 255]);
      expect(m3).toMatchObject({ key: 'k3', contentType: 'application/octet-stream' });
      expect([...m3.body]).toEqual([7]);
      expect(m4).toMatchObject({ key: 'k2', creationTime: 5_000 });
      expect(JSON.parse(m4.body.toString('utf8'))).toBe('two');
      // Publishing ids: txid * 2^20 + index within the transaction.
      const writers = f.broker.chunks(f.stream).map((chunk) => chunk.writer?.publishingId);
      expect(writers.at(-1)).toBe(relayPublishingId({ txid: m4.txid, index: 0 }));

      // Caught up: a second run publishes nothing, the backlog is empty.
      expect((await relay.run({ untilCaughtUp: true })).published).toBe(0);
      expect(f.seen()).toHaveLength(5);
      const backlog = await relay.backlog();
      expect(backlog.rows).toBe(0n);
      expect(backlog.position?.rowId).toBe(m4.id);
      await relay.close();
    },
    bound(30_000),
  );

  it(
    'a new relay of the same name resumes after the last row on the stream: no duplicate',
    async () => {
      const f = await fresh();
      const committed = [
        ...(await f.write([json('a', 1), json('b', 2)])),
        ...(await f.write([json('a', 3)])),
      ];
      const one = f.relay();
      expect((await one.run({ untilCaughtUp: true })).published).toBe(3);
      await one.close();
      committed.push(...(await f.write([json('b', 4), json('c', 5), json('a', 6)])));
      await f.write([json('z', 0)], true);
      committed.push(...(await f.write([json('c', 7)])));
      const two = f.relay();
      const started: RelayEventMap['started'][] = [];
      two.on('started', (event) => started.push(event));
      expect((await two.run({ untilCaughtUp: true })).published).toBe(4);
      expect(started[0]?.from?.rowId).toBe(committed[2]?.id);
      expectExactlyCommitted(f.seen(), committed);
      await two.close();
    },
    bound(30_000),
  );

  it.each([1, 9, 10, 11, 20, 24])(
    'resumes inside a transaction of 25 rows after its row %i (rows ordered by id, not as text)',
    async (stopAfter) => {
      const f = await fresh();
      const committed = await f.write(Array.from({ length: 25 }, (_, i) => json('k', i)));
      const controller = new AbortController();
      const first = f.relay({ maxBatchRows: 1 });
      let batches = 0;
      first.on('published', () => {
        if (++batches === stopAfter) controller.abort();
      });
      await first.run({ untilCaughtUp: true, signal: controller.signal });
      await first.close();
      expect(f.seen()).toHaveLength(stopAfter);
      const restarted = f.relay();
      const started: RelayEventMap['started'][] = [];
      restarted.on('started', (event) => started.push(event));
      expect((await restarted.run({ untilCaughtUp: true })).published).toBe(25 - stopAfter);
      expect(started[0]?.from).toMatchObject({
        index: stopAfter - 1,
        rowId: committed[stopAfter - 1]?.id,
      });
      expectExactlyCommitted(f.seen(), committed);
      await restarted.close();
    },
    bound(30_000),
  );

  it.each<FaultPoint>(['before-publish', 'after-publish', 'after-confirm', 'lose-confirm'])(
    "a crash at '%s' loses and duplicates nothing after a restart",
    async (point) => {
      const f = await fresh();
      const committed: CommittedRow[] = [];
      for (let t = 0; t < 6; t++) {
        committed.push(...(await f.write([0, 1, 2].map((i) => json(`k${i}`, t * 10 + i)))));
      }
      const fault = f.broker.injectFault({
        stream: f.stream,
        producer: 'relay',
        atPublish: 8,
        point,
      });
      const crashed = f.relay({ maxBatchRows: 4 });
      const outcome = await crashed.run({ untilCaughtUp: true }).then(
        (summary) => summary,
        (error: unknown) => error,
      );
      expect(fault.fired).toBe(true);
      if (point === 'lose-confirm') {
        // Retriable: the run resumed itself from where the stream stands.
        expect(outcome).toMatchObject({ retries: 1 });
      } else {
        expect(outcome).toBeInstanceOf(RelayError);
      }
      await crashed.close();
      const restarted = f.relay({ maxBatchRows: 4 });
      await restarted.run({ untilCaughtUp: true });
      expectExactlyCommitted(f.seen(), committed);
      await restarted.close();
    },
    bound(30_000),
  );

  it(
    'prune() deletes only rows the stream holds, and a restart still resumes correctly',
    async () => {
      const f = await fresh();
      const committed = [
        ...(await f.write([json('a', 1), json('b', 2)])),
        ...(await f.write([json('a', 3), json('a', 4)])),
      ];
      const relay = f.relay();
      expect(await relay.prune()).toBe(0); // nothing on the stream yet
      await relay.run({ untilCaughtUp: true });
      const pending = await f.write([json('b', 5)]);
      expect(await relay.prune()).toBe(2); // the first transaction's rows
      expect(await relay.prune()).toBe(0);
      // The last transaction on the stream and the unpublished one stay.
      expect(await f.count()).toBe(3);
      await relay.close();
      committed.push(...pending, ...(await f.write([json('c', 6)])));
      const restarted = f.relay();
      expect((await restarted.run({ untilCaughtUp: true })).published).toBe(2);
      expectExactlyCommitted(f.seen(), committed);
      expect(await restarted.prune()).toBe(3);
      expect(await f.count()).toBe(1);
      committed.push(...(await f.write([json('c', 7)])));
      await restarted.run({ untilCaughtUp: true });
      expectExactlyCommitted(f.seen(), committed);
      await restarted.close();
    },
    bound(30_000),
  );

  it(
    'refuses bad input to writeOutbox with a ConfigError, inserting nothing',
    async () => {
      const f = await fresh();
      await db.transaction(async (tx) => {
        for (const event of BAD_OUTBOX_EVENTS) {
          await expect(
            writeOutbox(tx, event as OutboxEvent, { table: f.table }),
            JSON.stringify(event, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)),
          ).rejects.toBeInstanceOf(ConfigError);
        }
      });
      expect(await f.count()).toBe(0);
      expect(
        (await db.query(`SELECT * FROM ${f.table}_keys`)).rows,
        'no key claimed either',
      ).toEqual([]);
    },
    bound(30_000),
  );

  it(
    "a row too large for a write stops the run with a RelayError at 'publish' naming it; nothing after it is skipped",
    async () => {
      const f = await fresh(4096);
      const before = await f.write([json('a', 1)]);
      const [big] = await f.write([{ key: 'a', bytes: new Uint8Array(8000) }]);
      await f.write([json('a', 3)]);
      const relay = f.relay({ maxBatchRows: 1 });
      for (let attempt = 0; attempt < 2; attempt++) {
        const error = await relay.run({ untilCaughtUp: true }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(RelayError);
        expect(error).toMatchObject({ stage: 'publish', retriable: false });
        expect((error as RelayError).row?.id).toBe(big?.id);
        expect((error as RelayError).message).toContain(`row ${big?.id}`);
        expectExactlyCommitted(f.seen(), before);
      }
      await relay.close();
    },
    bound(30_000),
  );

  it(
    "a stream whose last id names a row the table lacks stops the run with a RelayError at 'resume'",
    async () => {
      const f = await fresh();
      await f.write([json('a', 1)]);
      const foreign = f.broker.target(f.stream, { producer: 'relay', connection: 'other' });
      await foreign.publish(relayPublishingId({ txid: 2n ** 40n, index: 3 }), [Uint8Array.of(1)]);
      await foreign.release();
      const relay = f.relay();
      const error = await relay.run({ untilCaughtUp: true }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RelayError);
      expect(error).toMatchObject({ stage: 'resume', retriable: false });
      expect(f.broker.messages(f.stream)).toHaveLength(1);
      await relay.close();
    },
    bound(30_000),
  );

  it('close() closes the targets the relay made: a connection serves a bounded number', async () => {
    const f = await fresh();
    await f.write([json('a', 1)]);
    const broker = closingRelayBroker(f.broker);
    const relay = new OutboxRelay({
      name: 'relay',
      database: pglite(db),
      table: f.table,
      broker,
      to: f.stream,
    });
    await relay.run({ untilCaughtUp: true });
    expect(broker.open()).toEqual([f.stream]);
    await relay.close();
    expect(broker.made).toEqual([f.stream]);
    expect(broker.open()).toEqual([]);
  });
});
