// The same writes and storeOffset calls on RabbitMQ and on the embedded broker give the same
// offsets: a tracking chunk takes an offset on both and is never delivered, so a reader (the
// database sink among them) sees the gap on the embedded pair too.
import type { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonMessage, type Source } from '../../src/index.js';
import { MemoryBroker } from '../../src/memory/index.js';
import { pglite } from '../../src/pglite/index.js';
import { databaseSink } from '../../src/sink/database-sink.js';
import { eachBatch } from '../../src/sink/each-batch.js';
import { publishAll, rabbitForTests } from '../support/brokers/rabbitmq.js';
import { rows, startPglite } from '../support/jobs/sink-fixture.js';
import { bound } from '../support/timing.js';

const real = rabbitForTests();
let db: PGlite;
beforeAll(async () => {
  db = await startPglite();
}, bound(60_000));
afterAll(async () => {
  await db.close();
});

/** Writes and stores, in order: a number is that many messages, 'store' one storeOffset. */
type Step = number | 'store';
const STEPS: readonly Step[] = [3, 'store', 3, 'store', 'store', 2, 'store'];

interface Broker {
  readonly name: string;
  stream(): Promise<{
    source: Source;
    write: (count: number) => Promise<void>;
    store: (reference: string, offset: bigint) => Promise<void>;
  }>;
}

const embedded: Broker = {
  name: 'embedded',
  stream() {
    const broker = new MemoryBroker();
    broker.createStream('s');
    const source = broker.source('s');
    return Promise.resolve({
      source,
      store: (reference, offset) => source.storeOffset(reference, offset),
      write: (count) => {
        broker.append(
          's',
          Array.from({ length: count }, (_, v) => jsonMessage({ v })),
        );
        return Promise.resolve();
      },
    });
  },
};

const rabbitmq: Broker = {
  name: 'RabbitMQ',
  async stream() {
    const stream = await real.newStream('stored-offset-gap');
    const source = real.rabbit.source(stream);
    return {
      source,
      store: (reference, offset) => source.storeOffset(reference, offset),
      write: (count) =>
        publishAll(
          real.rabbit,
          stream,
          Array.from({ length: count }, (_, v) => jsonMessage({ v })),
        ),
    };
  },
};

/** The offsets of every message of `source`, read from 'first' up to its end. */
async function offsetsRead(source: Source): Promise<bigint[]> {
  const end = await source.endOffset();
  const offsets: bigint[] = [];
  const reading = new AbortController();
  for await (const chunk of source.read('first', reading.signal)) {
    for (let i = 0; i < chunk.count; i++) offsets.push(chunk.firstOffset + BigInt(i));
    if (chunk.firstOffset + BigInt(chunk.count) >= end) break;
  }
  reading.abort();
  return offsets;
}

async function run(broker: Broker): Promise<{ offsets: bigint[]; end: bigint }> {
  const { source, write, store } = await broker.stream();
  for (const step of STEPS) {
    if (step === 'store') await store('tracking', 0n);
    else await write(step);
  }
  return { offsets: await offsetsRead(source), end: await source.endOffset() };
}

describe('offsets after storeOffset, RabbitMQ and the embedded broker', () => {
  it('should give the same message offsets and end offset on both', async () => {
    const onRabbit = await run(rabbitmq);
    // Measured on RabbitMQ 4.0.5: each tracking chunk takes one offset.
    expect(onRabbit.offsets).toEqual([0n, 1n, 2n, 4n, 5n, 6n, 9n, 10n]);
    expect(onRabbit.end).toBe(11n);
    expect(await run(embedded)).toEqual(onRabbit);
  });

  for (const broker of [embedded, rabbitmq]) {
    it(`should resume a database sink across a stored offset (${broker.name})`, async () => {
      const { source, write, store } = await broker.stream();
      const table = `across_stored_${broker.name.toLowerCase()}`;
      await db.exec(`CREATE TABLE ${table} (message_offset bigint PRIMARY KEY)`);
      const sink = () =>
        databaseSink({
          name: `across-stored-${broker.name}`,
          source,
          database: pglite(db),
          maxBatchDelayMs: 0,
          into: eachBatch({
            apply: async (tx, batch) => {
              for (const m of batch.messages) {
                await tx.query(`INSERT INTO ${table} VALUES ($1)`, [m.offset.toString()]);
              }
            },
          }),
        });
      await write(3);
      await sink().run({ untilCaughtUp: true }); // caught up at 2
      await store('another-consumer', 2n); // takes offset 3
      await write(3);
      const summary = await sink().run({ untilCaughtUp: true });
      expect(summary.applied).toBe(3);
      const applied = await rows<{ o: string }>(
        db,
        `SELECT message_offset::text AS o FROM ${table} ORDER BY message_offset`,
      );
      expect(applied.map((r) => r.o)).toEqual(['0', '1', '2', '4', '5', '6']);
    });
  }
});
