// A database sink reading a job's results whose steps take several messages (a step over the
// target's write limit, written in several writes; a 'batch' step, one message per section):
// no transaction commits part of a step, so a reader of the table never sees half of an
// hour's totals and the checkpoint never points inside a step, whatever maxBatchMessages.
import { describe, expect, it } from 'vitest';
import { encodeMessage } from '../../../src/codecs/amqp-message.js';
import { aggregate, decodeResult, jsonMessage, type PackMode } from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { readBatches, type ReadMessage } from '../../../src/sink/batch-reader.js';
import { databaseSink } from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import type { SinkDatabase } from '../../../src/database/sink-database.js';
import type { DecodedResult } from '../../../src/result-format/result-format.js';
import { windowOutputs } from '../../../src/sink/window-outputs.js';
import {
  checkpointOf,
  claimsCheckpoint,
  pgliteForTests,
  rows,
} from '../../support/jobs/sink-fixture.js';

const db = pgliteForTests();

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const CUSTOMERS = 40;
const HOURS = 4;

/**
 * A broker of `frameMax` 2048 whose 'hourly' holds a job's totals of cents per customer and
 * hour, `pack`ed: 40 customers an hour, so that an hour's result takes several messages.
 */
async function hourlyBroker(pack: PackMode): Promise<MemoryBroker> {
  const broker = new MemoryBroker({ now: () => T0, frameMax: 2048 });
  broker.createStream('usage');
  broker.createStream('hourly');
  for (let hour = 0; hour < HOURS; hour++) {
    broker.append(
      'usage',
      Array.from({ length: CUSTOMERS }, (_, c) =>
        jsonMessage(
          { customer: `customer-${String(c).padStart(3, '0')}`, cents: 100 * hour + c },
          { creationTime: T0 + hour * HOUR + c * 1_000 },
        ),
      ),
    );
  }
  await aggregate<{ customer: string; cents: number }>(broker.source('usage'))
    .tumbling('1h')
    .key((usage) => usage.customer)
    .reduce((sum, usage) => sum + usage.cents, 0)
    .to(broker.target('hourly', { producer: 'hourly' }), { pack })
    .run({ untilCaughtUp: true });
  return broker;
}

/** Each offset of the target's step (its producer and last source offset) and its part. */
function stepsOf(broker: MemoryBroker, stream: string): Map<bigint, { step: string; of: number }> {
  const steps = new Map<bigint, { step: string; of: number }>();
  for (const { offset, bytes } of broker.messages(stream)) {
    const result = decodeResult(bytes);
    steps.set(offset, {
      step: `${result.producer}@${result.lastOffset}`,
      of: result.part?.of ?? 1,
    });
  }
  return steps;
}

/**
 * `inner` reporting, after each batch's transaction commits, what a reader of `table` sees
 * then: per hour, the customers it holds and their total.
 */
function observing(
  inner: SinkDatabase,
  table: string,
  seen: { hour: string; customers: number; cents: string }[][],
): SinkDatabase {
  return {
    async transaction(work) {
      const locked = { checkpoint: false };
      const result = await inner.transaction((tx) =>
        work({
          query: (sql, params) => {
            if (claimsCheckpoint(sql)) locked.checkpoint = true;
            return tx.query(sql, params);
          },
        }),
      );
      if (locked.checkpoint) {
        seen.push(
          await rows(
            db,
            `SELECT window_start::text AS hour, count(*)::int AS customers,
               sum((value #>> '{}')::bigint)::text AS cents
             FROM ${table} GROUP BY window_start ORDER BY window_start`,
          ),
        );
      }
      return result;
    },
    isRetriable: (error) => inner.isRetriable(error),
    close: () => inner.close(),
  };
}

describe("databaseSink: a job's steps of several messages", () => {
  for (const pack of ['single', 'batch'] as const) {
    it(`commits whole steps only, whatever maxBatchMessages ('${pack}', frameMax 2048)`, async () => {
      const broker = await hourlyBroker(pack);
      const steps = stepsOf(broker, 'hourly');
      // Every hour's result takes several messages: parts the sink could split.
      const hours = [...steps.values()].filter((s) => s.of > 1);
      expect(new Set(hours.map((s) => s.step)).size).toBe(HOURS - 1); // the last hour is open
      expect(Math.min(...hours.map((s) => s.of))).toBeGreaterThan(2);

      const table = `hourly_${pack}`;
      const seen: { hour: string; customers: number; cents: string }[][] = [];
      const sink = databaseSink({
        name: table,
        source: broker.source('hourly'),
        database: observing(pglite(db), table, seen),
        maxBatchMessages: 2,
        maxBatchDelayMs: 0,
        into: windowOutputs({ table }),
      });
      const applied: { first: bigint; last: bigint; messages: number }[] = [];
      sink.on('applied', (e) =>
        applied.push({ first: e.firstOffset, last: e.lastOffset, messages: e.messages }),
      );
      await sink.run({ untilCaughtUp: true });

      // Between transactions a reader sees each hour whole or not at all.
      const final = seen.at(-1) ?? [];
      expect(final).toHaveLength(HOURS - 1);
      for (const hour of final) expect(hour.customers).toBe(CUSTOMERS);
      for (const snapshot of seen) {
        for (const hour of snapshot) expect(final).toContainEqual(hour);
      }
      // Every transaction ends on a step's last message and begins on a step's first: each
      // step's messages are in one transaction.
      const transactionOf = new Map<string, Set<number>>();
      for (const [offset, { step }] of steps) {
        const index = applied.findIndex((t) => t.first <= offset && offset <= t.last);
        expect(index).toBeGreaterThanOrEqual(0);
        const held = transactionOf.get(step) ?? new Set<number>();
        held.add(index);
        transactionOf.set(step, held);
      }
      for (const [step, held] of transactionOf) expect([step, held.size]).toEqual([step, 1]);
      // A step takes more than maxBatchMessages: its transaction goes past it.
      expect(Math.max(...applied.map((t) => t.messages))).toBeGreaterThan(2);

      expect(seen.length).toBe(applied.length);
      expect(await checkpointOf(db, table, 'hourly')).toBe(
        broker.messages('hourly').at(-1)?.offset,
      );
    });
  }

  it("dead-letters a step whole when the database refuses one of its parts (onError's table)", async () => {
    const broker = await hourlyBroker('batch');
    const steps = stepsOf(broker, 'hourly');
    const table = 'refused_parts';
    await db.exec(
      `CREATE TABLE ${table} (key text, hour bigint, cents bigint CHECK (cents <> 215))`,
    );
    const sink = databaseSink<DecodedResult<number>>({
      name: table,
      source: broker.source('hourly'),
      database: pglite(db),
      maxBatchMessages: 1000,
      maxBatchDelayMs: 0,
      onError: { deadLetterTable: `${table}_dead` },
      into: eachBatch<DecodedResult<number>>({
        decode: 'result',
        apply: async (tx, batch) => {
          for (const { value } of batch.messages) {
            for (const output of value.outputs) {
              await tx.query(`INSERT INTO ${table} VALUES ($1, $2, $3)`, [
                output.key,
                output.start,
                output.value,
              ]);
            }
          }
        },
      }),
    });
    const summary = await sink.run({ untilCaughtUp: true });

    // Hour 2's customer 15 (215 cents) is refused: hour 2 goes to the dead letters whole, its
    // other parts with it, and the other hours are applied.
    const refused = broker
      .messages('hourly')
      .find(({ bytes }) => decodeResult<number>(bytes).outputs.some((o) => o.value === 215));
    const refusedStep = steps.get(refused?.offset ?? -1n)?.step;
    const stepOffsets = [...steps].filter(([, s]) => s.step === refusedStep).map(([o]) => o);
    expect(stepOffsets).toHaveLength(CUSTOMERS);
    const dead = await rows<{ o: string; stage: string; error: string }>(
      db,
      `SELECT "offset"::text AS o, stage, error FROM ${table}_dead ORDER BY "offset"`,
    );
    expect(dead.map((d) => BigInt(d.o))).toEqual(stepOffsets);
    expect(new Set(dead.map((d) => d.stage))).toEqual(new Set(['apply']));
    expect(dead[0]?.error).toContain('refused_parts_cents_check');
    expect(summary.deadLettered).toBe(CUSTOMERS);
    const held = await rows<{ hour: string; n: number }>(
      db,
      `SELECT hour::text AS hour, count(*)::int AS n FROM ${table} GROUP BY hour ORDER BY hour`,
    );
    expect(held).toEqual([
      { hour: String(T0), n: CUSTOMERS },
      { hour: String(T0 + HOUR), n: CUSTOMERS },
    ]);
  });
});

describe("databaseSink: a step's message that does not decode (onError's table)", () => {
  it('dead-letters the whole step, the others applied', async () => {
    const broker = new MemoryBroker();
    broker.createStream('t');
    broker.append('t', [
      resultMessage('a', 1),
      resultMessage('a', 4, [0, 2], 'text/plain'),
      resultMessage('a', 4, [1, 2]),
      resultMessage('a', 6),
    ]);
    const applied: bigint[] = [];
    const name = 'undecodable_part';
    const summary = await databaseSink<DecodedResult>({
      name,
      source: broker.source('t'),
      database: pglite(db),
      maxBatchDelayMs: 0,
      onError: { deadLetterTable: `${name}_dead` },
      into: eachBatch<DecodedResult>({
        decode: 'result',
        apply: (_, batch) => {
          applied.push(...batch.messages.map((m) => m.offset));
          return Promise.resolve();
        },
      }),
    }).run({ untilCaughtUp: true });
    expect(applied).toEqual([0n, 3n]);
    expect(summary).toMatchObject({ applied: 2, deadLettered: 2 });
    const dead = await rows<{ o: string; stage: string; error: string }>(
      db,
      `SELECT "offset"::text AS o, stage, error FROM ${name}_dead ORDER BY "offset"`,
    );
    expect(dead).toEqual([
      { o: '1', stage: 'decode', error: expect.stringContaining("content-type 'text/plain'") },
      {
        o: '2',
        stage: 'decode',
        error: expect.stringMatching(
          /^dead-lettered with the message at offset 1, which did not decode/,
        ),
      },
    ]);
  });
});

/**
 * A result message of `producer`'s step ending at `last`, holding nothing: part `index` of
 * `of`, or the step's one message (under another `contentType`, one that does not decode).
 */
function resultMessage(
  producer: string,
  last: number,
  part?: [number, number],
  contentType = 'application/msgpack-seq',
): Uint8Array {
  return encodeMessage({
    properties: { contentType },
    applicationProperties: {
      'sw-format': '2',
      'sw-source': 'source',
      'sw-producer': producer,
      'sw-window': 'tumbling(1m)',
      'sw-first-offset': String(last),
      'sw-last-offset': String(last),
      'sw-messages': '0',
      'sw-outputs': '0',
      'sw-late': '0',
      'sw-late-dropped': '0',
      'sw-dead-letters': '0',
      'sw-holds': 'none',
      ...(part === undefined ? {} : { 'sw-part': String(part[0]), 'sw-parts': String(part[1]) }),
    },
    body: { type: 'data', sections: [new Uint8Array(0)] },
  });
}

/** The offsets of each batch `readBatches` hands over from `stream` to its end. */
async function batchesOf(
  broker: MemoryBroker,
  stream: string,
  maxMessages: number,
  wholeSteps = true,
): Promise<bigint[][]> {
  const source = broker.source(stream);
  const batches: bigint[][] = [];
  const end = await source.endOffset();
  for await (const batch of readBatches(
    source,
    'first',
    new AbortController().signal,
    { maxMessages, maxDelayMs: 0, wholeSteps },
    end,
  )) {
    batches.push(batch.map((m) => m.offset));
  }
  return batches;
}

describe('readBatches with wholeSteps', () => {
  it("ends a batch only where every producer's step is whole, other producers' parts between", async () => {
    const broker = new MemoryBroker();
    broker.createStream('t');
    broker.append('t', [
      resultMessage('a', 1), // 0
      resultMessage('a', 5, [0, 3]), // 1
      resultMessage('b', 7, [0, 2]), // 2
      resultMessage('a', 5, [1, 3]), // 3
      resultMessage('b', 7, [1, 2]), // 4: b's step whole, a's not
      resultMessage('a', 5, [2, 3]), // 5: both whole
      resultMessage('b', 9, [0, 1]), // 6: a 'batch' step of one message
      jsonMessage({ not: 'a result' }), // 7
      resultMessage('a', 8, [0, 2]), // 8
    ]);
    broker.append('t', [jsonMessage({ v: 1 }), resultMessage('a', 8, [1, 2])]); // 9, 10
    expect(await batchesOf(broker, 't', 1)).toEqual([
      [0n],
      [1n, 2n, 3n, 4n, 5n],
      [6n],
      [7n],
      [8n, 9n, 10n],
    ]);
    expect(await batchesOf(broker, 't', 4)).toEqual([
      [0n],
      [1n, 2n, 3n, 4n, 5n],
      [6n, 7n],
      [8n, 9n, 10n],
    ]);
    // maxDelayMs 0 hands over what each chunk brings: the first, up to where its steps are whole.
    expect(await batchesOf(broker, 't', 100)).toEqual([
      [0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n],
      [8n, 9n, 10n],
    ]);
    // Without wholeSteps (a sink of plain messages) the parts are messages like any other.
    expect(await batchesOf(broker, 't', 4, false)).toEqual([
      [0n, 1n, 2n, 3n],
      [4n, 5n, 6n, 7n],
      [8n],
      [9n, 10n],
    ]);
  });

  it('never holds messages that are not results, nor results of one message', async () => {
    const broker = new MemoryBroker();
    broker.createStream('t');
    broker.append('t', [
      jsonMessage({ v: 1 }),
      new Uint8Array([1, 2, 3]), // not even an AMQP message
      resultMessage('a', 3),
      jsonMessage({ v: 2 }),
      resultMessage('a', 4, [0, 1]),
    ]);
    expect(await batchesOf(broker, 't', 2)).toEqual([[0n, 1n], [2n, 3n], [4n]]);
  });

  it("hands over what precedes a step past maxDelayMs, then waits for the step's last part however long", async () => {
    const broker = new MemoryBroker();
    broker.createStream('t');
    broker.append('t', [resultMessage('a', 1), resultMessage('a', 4, [0, 2])]);
    const stop = new AbortController();
    const batches = readBatches(
      broker.source('t'),
      'first',
      stop.signal,
      { maxMessages: 100, maxDelayMs: 20, wholeSteps: true },
      undefined,
    );
    const offsets = (batch: IteratorResult<ReadMessage[]>) =>
      batch.done === true ? undefined : batch.value.map((m) => m.offset);
    expect(offsets(await batches.next())).toEqual([0n]);
    let second: bigint[] | undefined;
    const next = batches.next().then((batch) => (second = offsets(batch)));
    await new Promise((resolve) => setTimeout(resolve, 200)); // ten times maxDelayMs
    expect(second).toBeUndefined();
    broker.append('t', [resultMessage('a', 4, [1, 2]), jsonMessage({ v: 1 })]);
    await next;
    expect(second).toEqual([1n, 2n, 3n]);
    stop.abort();
    await batches.return(undefined);
  });

  it('leaves a step not whole at the end of an untilCaughtUp run for the next: the checkpoint stays before it', async () => {
    const broker = new MemoryBroker();
    broker.createStream('t');
    broker.append('t', [resultMessage('a', 1), resultMessage('a', 4, [0, 2])]);
    const applied: bigint[] = [];
    const sink = () =>
      databaseSink<DecodedResult>({
        name: 'caught_up_inside_a_step',
        source: broker.source('t'),
        database: pglite(db),
        maxBatchDelayMs: 0,
        into: eachBatch<DecodedResult>({
          decode: 'result',
          apply: (_, batch) => {
            applied.push(...batch.messages.map((m) => m.offset));
            return Promise.resolve();
          },
        }),
      });
    await sink().run({ untilCaughtUp: true });
    expect(applied).toEqual([0n]);
    expect(await checkpointOf(db, 'caught_up_inside_a_step', 't')).toBe(0n);
    broker.append('t', [resultMessage('a', 4, [1, 2])]);
    await sink().run({ untilCaughtUp: true });
    expect(applied).toEqual([0n, 1n, 2n]);
    expect(await checkpointOf(db, 'caught_up_inside_a_step', 't')).toBe(2n);
  });
});
