// The outbox relay to a RabbitMQ super stream (made by the library's createSuperStream), on
// PostgreSQL: concurrent writers, and relays that follow one another, each on its own
// connection, each ended one of three ways: stopped between batches; its connection closed
// while a batch is in flight; or a frame to one partition dropped (its publishes refused, as
// a partition without a leader refuses them) while the batch's frames to the other partitions
// are stored, so that a partition holds later rows than another lost: the relay resumes by
// itself from what the partitions hold. Each partition must end with exactly the committed rows
// whose key routes to it, once each, in relay order, each key's rows in commit order; a
// partition that got one row at the start holds neither the resume point nor pruning back.
import type pg from 'pg';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { PublishError } from '../../src/common/errors.js';
import { postgres } from '../../src/postgres/index.js';
import { connect, type RabbitMQ } from '../../src/rabbitmq/connection.js';
import { OutboxRelay } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import { writeOutbox } from '../../src/outbox/outbox-write.js';
import type { RelayBroker, RelayTarget } from '../../src/outbox/relay-destination.js';
import { readRelayPublishingId } from '../../src/outbox/relay-publishing-id.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, readAll, uniqueStream } from '../support/brokers/rabbitmq.js';
import {
  expectExactlyOnPartitions,
  keysRoutedTo,
  seenOutboxMessage,
  type CommittedRow,
} from '../support/jobs/outbox-fixture.js';
import { bound } from '../support/timing.js';
import { seededRandom as random } from '../support/arbitraries/seeded-random.js';

const rabbit = rabbitForTests();
const pgt = postgresForTests();

const TABLE = 'outbox_super';
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes a row per key of `keys` in one transaction; the rows, or [] when rolled back. */
async function writeTx(
  pool: pg.Pool,
  keys: readonly string[],
  rollback: boolean,
  label: string,
): Promise<CommittedRow[]> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const rows: CommittedRow[] = [];
    for (const [i, key] of keys.entries()) {
      const body = `${label}-${i}`;
      const id = await writeOutbox(client, { key, json: body }, { table: TABLE });
      rows.push({ id, key, body: JSON.stringify(body) });
    }
    await client.query(rollback ? 'ROLLBACK' : 'COMMIT');
    return rollback ? [] : rows;
  } finally {
    client.release();
  }
}

function relayOn(
  pool: pg.Pool,
  broker: RelayBroker,
  superStream: string,
  maxBatchRows: number,
): OutboxRelay {
  return new OutboxRelay({
    name: 'relay',
    database: postgres(pool),
    table: TABLE,
    broker,
    toSuperStream: superStream,
    maxBatchRows,
    pollIntervalMs: 10,
    retryDelayMs: 10,
    warnAfterRetries: Infinity,
  });
}

/** A frame to a partition, as the dropping broker saw it ('start': a relay (re)started). */
interface Frame {
  readonly partition: string;
  readonly ids: readonly bigint[];
  readonly dropped: boolean;
}

/**
 * `connection` as a relay's broker, but the `dropAt`-th frame to `partition` is refused
 * without being sent (a retriable `PublishError`), and so is every later one until the
 * target's resume point is asked again, as a real target's fence does.
 */
function droppingFrame(
  connection: RabbitMQ,
  partition: string,
  dropAt: number,
  frames: (Frame | 'start')[],
): RelayBroker {
  return {
    partitions: (superStream) => connection.partitions(superStream),
    target: (stream, options) => {
      const target = connection.target(stream, options);
      let calls = 0;
      let fenced = false;
      const wrapped: RelayTarget = {
        stream,
        producer: target.producer,
        get maxWriteBytes() {
          return target.maxWriteBytes;
        },
        lastPublishingId: () => {
          fenced = false;
          return target.lastPublishingId();
        },
        lastPublishingIdOf: (producer) => target.lastPublishingIdOf(producer),
        hasPublished: () => target.hasPublished(),
        readResult: (id, where) => target.readResult(id, where),
        publish: (id, messages) => target.publish(id, messages),
        release: () => target.release(),
        publishEach: (entries) => {
          const ids = entries.map((entry) => entry.publishingId);
          const drop = stream === partition && (fenced || ++calls === dropAt);
          frames.push({ partition: stream, ids, dropped: drop });
          if (!drop) return target.publishEach(entries);
          fenced = true;
          return ids.map((id) =>
            Promise.reject(new PublishError(stream, id, true, 'dropped by the test')),
          );
        },
      };
      return wrapped;
    },
  };
}

describe('outbox relay to a super stream on PostgreSQL and RabbitMQ', () => {
  it(
    'each partition holds exactly the committed rows routed to it, in order, across relays stopped, cut mid-batch and missing a frame to one partition; an idle partition holds nothing back',
    async () => {
      const superStream = uniqueStream('outbox-super');
      const streams = await rabbit.rabbit.createSuperStream(superStream, { partitions: 3 });
      onTestFinished(() => rabbit.rabbit.deleteSuperStream(superStream));
      const pool = pgt.pool({ max: 8 });
      await createOutboxTable(postgres(pool), TABLE);
      const next = random(Number(process.env.OUTBOX_SEED ?? 29));

      // Partition 2 gets one row, first; then a backlog on partitions 0 and 1, so that the
      // first relay certainly has a frame to partition 0 to drop; then three writers, each with
      // its own keys on partitions 0 and 1 (so each key's commit order is its writer's order).
      const [idle] = keysRoutedTo(2, 3, 1) as [string];
      const committed = await writeTx(pool, [idle], false, 'idle');
      const [zero, one] = [keysRoutedTo(0, 3, 6), keysRoutedTo(1, 3, 6)];
      for (let t = 0; t < 4; t++) {
        committed.push(...(await writeTx(pool, [...zero, ...one], false, `backlog-${t}`)));
      }
      const writing = Promise.all(
        [0, 1, 2].map(async (w) => {
          const keys = [...zero.slice(2 * w, 2 * w + 2), ...one.slice(2 * w, 2 * w + 2)];
          for (let t = 0; t < 80; t++) {
            const picked = Array.from(
              { length: 1 + Math.floor(next() * 4) },
              () => keys[Math.floor(next() * keys.length)] as string,
            );
            committed.push(...(await writeTx(pool, picked, next() < 0.15, `w${w}-${t}`)));
            await pause(next() * 30);
          }
        }),
      );
      const writers = { done: false };
      void writing.then(() => (writers.done = true));

      // Relays one after another, each on its own connection, ended in turn: stopped a batch
      // after resuming by itself from a frame to partition 0 dropped; stopped after a few
      // batches; or with their connection closed once a few batches are done and the next is
      // in flight. A relay still running when the writers are done is stopped (the first one
      // only once it has resumed from its drop: the backlog makes that certain, whatever the
      // timing); those started after run until caught up.
      const frames: (Frame | 'start')[] = [];
      const ends = { stopped: 0, cutMidBatch: 0, dropped: 0 };
      let lives = 0;
      while (!writers.done || lives < 12) {
        lives++;
        const first = lives === 1;
        const kind = (['drop', 'stop', 'cut'] as const)[(lives - 1) % 3] as 'stop' | 'cut' | 'drop';
        const connection = await connect(inject('rabbitmqUrl'));
        const dropAt = first ? 1 : 1 + Math.floor(next() * 3);
        const broker =
          kind === 'drop'
            ? droppingFrame(connection, streams[0] as string, dropAt, frames)
            : connection;
        const relay = relayOn(pool, broker, superStream, 8 + Math.floor(next() * 9));
        const controller = new AbortController();
        let retried = false;
        void writing.then(() => {
          if (!first || retried) controller.abort();
        });
        const stopAt = 1 + Math.floor(next() * 5);
        let watch: NodeJS.Timeout | undefined;
        let batches = 0;
        relay.on('started', () => frames.push('start'));
        relay.on('retry', () => {
          if (kind === 'cut') controller.abort();
          if (kind === 'drop' && !retried) ends.dropped++;
          retried = true;
        });
        relay.on('published', () => {
          batches++;
          if (kind === 'drop') {
            if (retried) controller.abort();
            return;
          }
          if (batches !== stopAt) return;
          if (kind === 'stop') {
            ends.stopped++;
            controller.abort();
            return;
          }
          watch = setInterval(() => {
            if (relay.inFlight === 0) return;
            clearInterval(watch);
            ends.cutMidBatch++;
            void connection.close();
          }, 1);
        });
        await relay
          .run({ untilCaughtUp: writers.done, signal: controller.signal })
          .catch(() => undefined);
        clearInterval(watch);
        await relay.close();
        await connection.close();
        if (lives > 300) throw new Error('the relays did not finish within 300 lives');
      }
      await writing;
      const last = relayOn(pool, rabbit.rabbit, superStream, 500);
      await last.run({ untilCaughtUp: true });

      const seen = await Promise.all(
        streams.map(async (stream) =>
          (await readAll(rabbit.rabbit, stream)).map((bytes) => seenOutboxMessage(bytes)),
        ),
      );
      expectExactlyOnPartitions(seen, committed);
      expect(seen[2]?.map((message) => message.key)).toEqual([idle]);
      // How often the trap was there: a frame to partition 0 dropped while the same batch
      // stored a later row on partition 1 (up to the relay's restart). Counted, not required:
      // whether a later frame goes out after the dropped one depends on timing (under two busy
      // cores none did in 3 runs of 3). The component tests build the trap on purpose and the
      // property test has a floor on it (outbox-relay-super-stream.test.ts in both).
      const trapped = frames.filter((frame, at) => {
        if (frame === 'start' || !frame.dropped) return false;
        const rest = frames.slice(at + 1);
        const batch = rest.slice(0, rest.includes('start') ? rest.indexOf('start') : undefined);
        return batch.some(
          (other) =>
            other !== 'start' &&
            !other.dropped &&
            other.partition !== frame.partition &&
            other.ids.some((id) => id > (frame.ids[0] ?? 0n)),
        );
      }).length;
      expect(ends.dropped).toBeGreaterThanOrEqual(1);
      console.log(
        `outbox super stream: ${committed.length} rows, ${lives} relays: ${ends.stopped} ` +
          `stopped, ${ends.cutMidBatch} cut with publishes in flight, ${ends.dropped} ` +
          `resumed after a dropped frame (${trapped} frames dropped with a later row stored ` +
          'on another partition)',
      );

      // The idle partition's last row is long passed: the resume point is the busy ones'.
      const backlog = await last.backlog();
      expect(backlog.rows).toBe(0n);
      expect(backlog.partitions?.[2]).toMatchObject({ stream: streams[2], through: 0n });
      const resumePoint = (backlog.partitions ?? []).reduce(
        (highest, { through = 0n }) => (through > highest ? through : highest),
        0n,
      );
      expect(resumePoint).toBeGreaterThan(backlog.partitions?.[2]?.lastPublishingId ?? 0n);
      // Pruning follows the resume point too: every row of the transactions before its own
      // goes. (How many that is depends on how the last relay cut its batches.)
      const resumeTxid = readRelayPublishingId(resumePoint)?.txid ?? 0n;
      const { rows } = await pool.query<{ before: string }>(
        `SELECT count(*)::text AS before FROM ${TABLE} WHERE txid < $1::text::xid8`,
        [resumeTxid.toString()],
      );
      const before = Number(rows[0]?.before);
      expect(before).toBeGreaterThan(0);
      expect(await last.prune()).toBe(before);
      await last.close();
    },
    bound(180_000),
  );
});
