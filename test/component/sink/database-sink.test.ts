import { describe, expect, it, vi } from 'vitest';
import { ConfigError, SinkError, SourceError } from '../../../src/common/errors.js';
import { silentLogger } from '../../../src/common/logger.js';
import { runUntilSignal } from '../../../src/dsl/run-until-signal.js';
import { sourceMessage } from '../../../src/codecs/source-message.js';
import type { Source } from '../../../src/ports/ports.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { pglite } from '../../../src/pglite/index.js';
import {
  databaseSink,
  type DatabaseSink,
  type DatabaseSinkOptions,
} from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import type { SinkDatabase } from '../../../src/database/sink-database.js';
import type { SinkEventMap } from '../../../src/sink/sink-events.js';
import {
  appendJson,
  checkpointOf,
  faultyDatabase,
  rows,
  sqlError,
  pgliteForTests,
} from '../../support/jobs/sink-fixture.js';

const db = pgliteForTests();

let tables = 0;
/** A fresh table `applied (message offset, value)`, no key: a message applied twice shows. */
async function freshTable(): Promise<string> {
  const table = `applied_${++tables}`;
  await db.exec(
    `CREATE TABLE ${table} (message_offset bigint NOT NULL, v integer NOT NULL CHECK (v >= 0))`,
  );
  return table;
}

/** A sink writing each message's value `{ v }` as a row of `table`. */
function sinkInto(
  table: string,
  options: Partial<DatabaseSinkOptions<{ v: number }>> & { source: Source },
) {
  return databaseSink<{ v: number }>({
    name: table,
    database: pglite(db),
    maxBatchDelayMs: 0,
    into: eachBatch<{ v: number }>({
      apply: async (tx, batch) => {
        for (const m of batch.messages) {
          await tx.query(`INSERT INTO ${table} (message_offset, v) VALUES ($1, $2)`, [
            m.offset.toString(),
            m.value.v,
          ]);
        }
      },
    }),
    ...options,
  });
}

async function tableOf(table: string): Promise<{ o: string; v: number }[]> {
  return rows(db, `SELECT message_offset::text AS o, v FROM ${table} ORDER BY message_offset, v`);
}

function expected(values: readonly number[]): { o: string; v: number }[] {
  return values.map((v, i) => ({ o: String(i), v }));
}

function brokerWith(values: readonly number[], perChunk = values.length): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('in');
  appendJson(
    broker,
    'in',
    values.map((v) => ({ v })),
    perChunk,
  );
  return broker;
}

function collect<K extends keyof SinkEventMap>(
  sink: DatabaseSink<{ v: number }> | DatabaseSink<unknown>,
  name: K,
): SinkEventMap[K][] {
  const seen: SinkEventMap[K][] = [];
  sink.on(name, (e) => seen.push(e));
  return seen;
}

describe('databaseSink: the checkpoint', () => {
  it('applies each batch with its checkpoint and resumes at the stored offset + 1', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5]);
    const first = sinkInto(table, { source: broker.source('in'), maxBatchMessages: 2 });
    expect(await first.run({ untilCaughtUp: true })).toEqual({
      applied: 5,
      skipped: 0,
      deadLettered: 0,
      transactions: 3,
      retries: 0,
    });
    expect(await checkpointOf(db, table, 'in')).toBe(4n);

    appendJson(broker, 'in', [{ v: 6 }, { v: 7 }]);
    const second = sinkInto(table, { source: broker.source('in') });
    const started = collect(second, 'started');
    expect((await second.run({ untilCaughtUp: true })).applied).toBe(2);
    expect(started).toEqual([{ stream: 'in', checkpoint: 4n, from: 5n, retries: 0 }]);
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6, 7]));
    expect(await checkpointOf(db, table, 'in')).toBe(6n);
  });

  it('claims the checkpoint of a batch after it in one statement, before the batch is applied', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5, 6], 2);
    const inner = pglite(db);
    const transactions: string[][] = [];
    const database: SinkDatabase = {
      ...inner,
      transaction: (work) => {
        const sent: string[] = [];
        transactions.push(sent);
        return inner.transaction((tx) =>
          work({
            query: (sql, params) => {
              sent.push(sql.split(' ', 1)[0] as string);
              return tx.query(sql, params);
            },
          }),
        );
      },
    };
    await sinkInto(table, { source: broker.source('in'), database, maxBatchMessages: 2 }).run({
      untilCaughtUp: true,
    });

    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6]));
    expect(await checkpointOf(db, table, 'in')).toBe(5n);
    const batches = transactions.filter((sent) => sent.includes('INSERT') && sent[0] === 'UPDATE');
    // The first finds no row (the update moves nothing): inserted, locked, then moved.
    expect(batches[0]).toEqual(['UPDATE', 'INSERT', 'SELECT', 'UPDATE', 'INSERT', 'INSERT']);
    // Every later one: one update, moving the checkpoint, then the batch's own statements.
    expect(batches.slice(1)).toEqual([
      ['UPDATE', 'INSERT', 'INSERT'],
      ['UPDATE', 'INSERT', 'INSERT'],
    ]);
  });

  it('passes over the messages at or below the checkpoint another instance stored meanwhile, counted', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5, 6]);
    // Another instance of the sink commits offsets 0..3 between this one's start and its batch.
    const inner = pglite(db);
    let moved = false;
    const database: SinkDatabase = {
      ...inner,
      transaction: async (work) => {
        if (started.length > 0 && !moved) {
          moved = true;
          await db.exec(`INSERT INTO ${table} VALUES (0, 1), (1, 2), (2, 3), (3, 4)`);
          await db.exec(
            `INSERT INTO stream_windows_checkpoints (sink, stream, last_offset) ` +
              `VALUES ('${table}', 'in', 3)`,
          );
        }
        return inner.transaction(work);
      },
    };
    const sink = sinkInto(table, { source: broker.source('in'), database, maxBatchMessages: 3 });
    const started = collect(sink, 'started');
    const skipped = collect(sink, 'skipped');
    const applied = collect(sink, 'applied');
    const summary = await sink.run({ untilCaughtUp: true });
    expect(started[0]?.from).toBe('first');
    expect(skipped).toEqual([
      { stream: 'in', firstOffset: 0n, lastOffset: 2n, messages: 3, checkpoint: 3n },
    ]);
    expect(applied.map((a) => [a.firstOffset, a.lastOffset, a.messages, a.skipped])).toEqual([
      [3n, 5n, 2, 1],
    ]);
    expect(summary).toMatchObject({ applied: 2, skipped: 4, transactions: 2 });
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6]));
  });

  it("applies the part of a batch past the checkpoint another instance stored inside it, and moves it to the batch's end", async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5, 6]);
    // Another instance commits offsets 0..1 between this one's start and its batch (0..2): the
    // one-statement claim (checkpoint below the batch's first offset) does not hold.
    const inner = pglite(db);
    let moved = false;
    const database: SinkDatabase = {
      ...inner,
      transaction: async (work) => {
        if (started.length > 0 && !moved) {
          moved = true;
          await db.exec(`INSERT INTO ${table} VALUES (0, 1), (1, 2)`);
          await db.exec(
            `INSERT INTO stream_windows_checkpoints (sink, stream, last_offset) ` +
              `VALUES ('${table}', 'in', 1)`,
          );
        }
        return inner.transaction(work);
      },
    };
    const sink = sinkInto(table, { source: broker.source('in'), database, maxBatchMessages: 3 });
    const started = collect(sink, 'started');
    const applied = collect(sink, 'applied');
    const summary = await sink.run({ untilCaughtUp: true });
    expect(applied.map((a) => [a.firstOffset, a.lastOffset, a.messages, a.skipped])).toEqual([
      [0n, 2n, 1, 2],
      [3n, 5n, 3, 0],
    ]);
    expect(summary).toMatchObject({ applied: 4, skipped: 2, transactions: 2 });
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6]));
    expect(await checkpointOf(db, table, 'in')).toBe(5n);
  });

  it('writes no dead letter again that another instance wrote at or below the checkpoint', async () => {
    const table = await freshTable();
    const broker = brokerWith([]);
    broker.append('in', [sourceMessage('{"v":1}'), sourceMessage('not json')]);
    const onError = { deadLetterTable: `${table}_dead` };
    // Another instance applies offset 0 and dead-letters offset 1 between this one's start and
    // its batch (0..1), which then finds the checkpoint at 1.
    const inner = pglite(db);
    let other: Promise<unknown> | undefined;
    const database: SinkDatabase = {
      ...inner,
      transaction: async (work) => {
        if (started.length > 0) {
          other ??= sinkInto(table, { source: broker.source('in'), onError }).run({
            untilCaughtUp: true,
          });
          await other;
        }
        return inner.transaction(work);
      },
    };
    const sink = sinkInto(table, { source: broker.source('in'), database, onError });
    const started = collect(sink, 'started');
    const skipped = collect(sink, 'skipped');
    const summary = await sink.run({ untilCaughtUp: true });
    expect(summary).toMatchObject({ applied: 0, skipped: 2, deadLettered: 0, transactions: 1 });
    expect(skipped).toEqual([
      { stream: 'in', firstOffset: 0n, lastOffset: 1n, messages: 2, checkpoint: 1n },
    ]);
    expect(await tableOf(table)).toEqual(expected([1]));
    expect(await rows(db, `SELECT "offset"::text AS offset, stage FROM ${table}_dead`)).toEqual([
      { offset: '1', stage: 'decode' },
    ]);
    expect(await checkpointOf(db, table, 'in')).toBe(1n);
  });

  it('applies every message once between two instances running at once', async () => {
    const table = await freshTable();
    const values = Array.from({ length: 60 }, (_, i) => i);
    const broker = brokerWith(values, 7);
    const [a, b] = await Promise.all(
      [2, 5].map((size) =>
        sinkInto(table, { source: broker.source('in'), maxBatchMessages: size }).run({
          untilCaughtUp: true,
        }),
      ),
    );
    expect((a?.applied ?? 0) + (b?.applied ?? 0)).toBe(60);
    expect(await tableOf(table)).toEqual(expected(values));
    expect(await checkpointOf(db, table, 'in')).toBe(59n);
  });
});

describe('databaseSink: a single active consumer source', () => {
  it('reads the checkpoint when activated: a standby taking over resumes where the active one stopped', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5]);
    const member = () =>
      sinkInto(table, { source: broker.source('in', { singleActive: { name: 'g' } }) });
    const [a, b] = [member(), member()];
    const appliedBy = (sink: typeof a, total: number) =>
      new Promise<void>((resolve) => {
        let seen = 0;
        sink.on('applied', (e) => {
          seen += e.messages;
          if (seen === total) resolve();
        });
      });
    const stopA = new AbortController();
    const stopB = new AbortController();
    const aDone = appliedBy(a, 8);
    const runA = a.run({ signal: stopA.signal });
    const startedB = collect(b, 'started');
    const runB = b.run({ signal: stopB.signal });
    appendJson(broker, 'in', [{ v: 6 }, { v: 7 }, { v: 8 }]);
    await aDone;
    expect(startedB).toEqual([]); // standing by: the checkpoint not read yet
    const bDone = appliedBy(b, 2);
    stopA.abort();
    expect((await runA).applied).toBe(8);
    appendJson(broker, 'in', [{ v: 9 }, { v: 10 }]);
    await bDone;
    stopB.abort();
    expect(await runB).toMatchObject({ applied: 2, skipped: 0 });
    expect(startedB.map((e) => e.from)).toEqual([8n]);
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
  });
});

describe('databaseSink: batches and backpressure', () => {
  it('makes one transaction per maxBatchMessages messages, not per message', async () => {
    const table = await freshTable();
    const broker = brokerWith(Array.from({ length: 10 }, (_, i) => i));
    const sink = sinkInto(table, { source: broker.source('in'), maxBatchMessages: 3 });
    const applied = collect(sink, 'applied');
    await sink.run({ untilCaughtUp: true });
    expect(applied.map((a) => a.messages)).toEqual([3, 3, 3, 1]);
  });

  it('hands over a batch maxBatchDelayMs after its first message when no more come', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2], 1);
    const sink = sinkInto(table, {
      source: broker.source('in'),
      maxBatchMessages: 100,
      maxBatchDelayMs: 30,
    });
    const stop = new AbortController();
    const applied = new Promise<SinkEventMap['applied']>((resolve) => sink.on('applied', resolve));
    const run = sink.run({ signal: stop.signal });
    expect(await applied).toMatchObject({ firstOffset: 0n, lastOffset: 1n, messages: 2 });
    stop.abort();
    await run;
  });

  it('reads no further while a transaction is under way', async () => {
    const table = await freshTable();
    const broker = brokerWith(
      Array.from({ length: 20 }, (_, i) => i),
      1,
    );
    const source = broker.source('in');
    let delivered = 0;
    const counting: Source = {
      stream: source.stream,
      endOffset: () => source.endOffset(),
      async *read(from, signal) {
        for await (const chunk of source.read(from, signal)) {
          delivered += chunk.count;
          yield chunk;
        }
      },
    };
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => undefined;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const sink = databaseSink({
      name: table,
      source: counting,
      database: pglite(db),
      maxBatchMessages: 1,
      maxBatchDelayMs: 0,
      into: eachBatch({
        apply: async () => {
          entered();
          await held;
        },
      }),
    });
    const run = sink.run({ untilCaughtUp: true });
    await inside;
    // Whatever a read ahead would do on the embedded broker is done once the event loop has
    // gone round: no timer of its own is involved (maxBatchDelayMs 0).
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(sink.inFlight).toBe(1);
    expect(delivered).toBeLessThanOrEqual(2);
    release();
    expect((await run).applied).toBe(20);
  });
});

describe('databaseSink: bad input and database errors', () => {
  it('stops on a constraint violation naming the stream and batch, nothing of the batch applied', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5, -6, 7, 8]);
    const sink = sinkInto(table, { source: broker.source('in'), maxBatchMessages: 4 });
    const error = await sink.run({ untilCaughtUp: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SinkError);
    expect(error).toMatchObject({
      code: 'SINK_FAILED',
      sink: table,
      stream: 'in',
      firstOffset: 4n,
      lastOffset: 7n,
      stage: 'apply',
      retriable: false,
      cause: { code: '23514' },
    });
    expect((error as Error).message).toContain(`offsets 4..7 of stream 'in' (apply)`);
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4]));
    expect(await checkpointOf(db, table, 'in')).toBe(3n);

    // Fixed, a restart applies the rest once.
    await db.exec(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_v_check`);
    await sinkInto(table, { source: broker.source('in') }).run({ untilCaughtUp: true });
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, -6, 7, 8]));
  });

  it("stops at stage 'checkpoint' when the checkpoint cannot be written, nothing of the batch applied", async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2]);
    const inner = pglite(db);
    const database: SinkDatabase = {
      ...inner,
      transaction: (work) =>
        inner.transaction((tx) =>
          work({
            query: (sql, params) =>
              sql.startsWith('UPDATE')
                ? Promise.reject(sqlError('42501', 'permission denied'))
                : tx.query(sql, params),
          }),
        ),
    };
    const sink = sinkInto(table, { source: broker.source('in'), database });
    await expect(sink.run({ untilCaughtUp: true })).rejects.toMatchObject({
      name: 'SinkError',
      stream: 'in',
      firstOffset: 0n,
      lastOffset: 1n,
      stage: 'checkpoint',
      retriable: false,
    });
    expect(await tableOf(table)).toEqual([]);
  });

  it('stops on a message that does not decode, at its offset, the batch before it applied', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2]);
    broker.append('in', [sourceMessage('not json')]);
    appendJson(broker, 'in', [{ v: 4 }]);
    const sink = sinkInto(table, { source: broker.source('in'), maxBatchMessages: 2 });
    await expect(sink.run({ untilCaughtUp: true })).rejects.toMatchObject({
      name: 'SinkError',
      stream: 'in',
      firstOffset: 2n,
      lastOffset: 2n,
      stage: 'decode',
      retriable: false,
    });
    expect(await tableOf(table)).toEqual(expected([1, 2]));
  });

  it("writes what fails for good to onError's dead-letter table and applies the rest", async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2]);
    broker.append('in', [sourceMessage('not json')]);
    appendJson(broker, 'in', [{ v: 4 }, { v: -5 }, { v: 6 }]);
    const sink = sinkInto(table, {
      source: broker.source('in'),
      maxBatchMessages: 10,
      onError: { deadLetterTable: `${table}_dead` },
    });
    const dead = collect(sink, 'deadLettered');
    expect(await sink.run({ untilCaughtUp: true })).toMatchObject({ applied: 4, deadLettered: 2 });
    expect(dead.map((d) => d.offset)).toEqual([2n, 4n]);
    expect(await tableOf(table)).toEqual([
      { o: '0', v: 1 },
      { o: '1', v: 2 },
      { o: '3', v: 4 },
      { o: '5', v: 6 },
    ]);
    const letters = await rows<{ offset: string; stage: string; message: Uint8Array }>(
      db,
      `SELECT "offset"::text AS offset, stage, message FROM ${table}_dead ORDER BY "offset"`,
    );
    expect(letters.map((l) => [l.offset, l.stage])).toEqual([
      ['2', 'decode'],
      ['4', 'apply'],
    ]);
    expect(Buffer.from(letters[0]?.message ?? []).toString()).toContain('not json');
    expect(await checkpointOf(db, table, 'in')).toBe(5n);
  });

  it('retries a retriable error from the checkpoint, counted, nothing applied twice', async () => {
    const table = await freshTable();
    const values = [1, 2, 3, 4, 5, 6, 7];
    const broker = brokerWith(values);
    // Batch 2 fails before its commit (a deadlock); batch 3, its retry, after it (the answer lost).
    const database = faultyDatabase(db, (n) =>
      n === 2
        ? { when: 'before', error: sqlError('40P01') }
        : n === 3
          ? { when: 'after', error: sqlError('08006') }
          : undefined,
    );
    const warnings: string[] = [];
    const logger = {
      ...silentLogger,
      warn: (_: object, message: string) => warnings.push(message),
    };
    const sink = sinkInto(table, {
      source: broker.source('in'),
      database,
      maxBatchMessages: 2,
      retryDelayMs: 1,
      logger,
    });
    const retries = collect(sink, 'retry');
    const summary = await sink.run({ untilCaughtUp: true });
    expect(warnings).toEqual([
      `sink '${table}' resumes from its checkpoint on 'in' in 1 ms`,
      `sink '${table}' resumes from its checkpoint on 'in' in 2 ms`,
    ]);
    expect(
      retries.map((r) => {
        const { retriable, firstOffset } = r.error as Error & Partial<SinkError>;
        return [retriable, firstOffset];
      }),
    ).toEqual([
      [true, 2n],
      [true, 2n],
    ]);
    expect(summary.retries).toBe(2);
    expect(await tableOf(table)).toEqual(expected(values));
  });

  it("resumes from the checkpoint after the source's retriable error (a lost connection)", async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3, 4, 5, 6], 2);
    const source = broker.source('in');
    let reads = 0;
    const losing: Source = {
      stream: source.stream,
      endOffset: () => source.endOffset(),
      async *read(from, signal) {
        const first = ++reads === 1;
        let chunks = 0;
        for await (const chunk of source.read(from, signal)) {
          if (first && ++chunks === 2) throw new SourceError('in', true, 'connection lost');
          yield chunk;
        }
      },
    };
    const sink = sinkInto(table, { source: losing, maxBatchMessages: 2, retryDelayMs: 1 });
    const started = collect(sink, 'started');
    const retries = collect(sink, 'retry');
    expect(await sink.run({ untilCaughtUp: true })).toMatchObject({ applied: 6, retries: 1 });
    expect(retries[0]?.error).toBeInstanceOf(SourceError);
    expect(started.map((e) => e.from)).toEqual(['first', 2n]);
    expect(await tableOf(table)).toEqual(expected([1, 2, 3, 4, 5, 6]));
  });

  it('warns on stderr after 5 retries in a row, says when it recovers, and not with warnAfterRetries Infinity', async () => {
    const lines: string[] = [];
    const said = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: unknown) => {
      if (String(chunk).startsWith('stream-windows: ')) lines.push(String(chunk));
      return true;
    });
    try {
      /** 'in', whose first `failures` reads lose their connection before delivering. */
      const failing = (broker: MemoryBroker, failures: number): Source => {
        const source = broker.source('in');
        let reads = 0;
        return {
          stream: source.stream,
          endOffset: () => source.endOffset(),
          async *read(from, signal) {
            if (++reads <= failures) throw new SourceError('in', true, 'connection lost');
            yield* source.read(from, signal);
          },
        };
      };
      const table = await freshTable();
      const sink = sinkInto(table, { source: failing(brokerWith([1, 2]), 6), retryDelayMs: 1 });
      expect(await sink.run({ untilCaughtUp: true })).toMatchObject({ applied: 2, retries: 6 });
      expect(lines).toEqual([
        expect.stringMatching(
          new RegExp(
            `^stream-windows: sink '${table}' on 'in' has retried 5 times in a row without ` +
              'progress for \\d+\\.\\d s, the last after SourceError SOURCE_FAILED: .*connection lost; ' +
              'retrying in 16 ms \\(warnAfterRetries: Infinity, or a logger, silences this\\)\\n$',
          ),
        ),
        expect.stringMatching(
          new RegExp(`^stream-windows: sink '${table}' on 'in' recovered after 6 retries in a row`),
        ),
      ]);

      const quiet = sinkInto(await freshTable(), {
        source: failing(brokerWith([1, 2]), 6),
        retryDelayMs: 1,
        warnAfterRetries: Infinity,
      });
      expect(await quiet.run({ untilCaughtUp: true })).toMatchObject({ retries: 6 });
      expect(lines).toHaveLength(2);
      expect(() =>
        sinkInto(table, { source: failing(brokerWith([1]), 0), warnAfterRetries: 0 }),
      ).toThrow(
        'warnAfterRetries must be an integer >= 1, or Infinity to never warn of retries, given: 0',
      );
    } finally {
      said.mockRestore();
    }
  });

  it('rolls back a transaction longer than transactionTimeoutMs and retries it', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3]);
    const HANGS = 'SELECT 1 AS hangs';
    const inner = pglite(db);
    const hanging: SinkDatabase = {
      ...inner,
      transaction: (work) =>
        inner.transaction((tx) =>
          work({
            query: (sql, params) =>
              sql === HANGS ? new Promise<never>(() => undefined) : tx.query(sql, params),
          }),
        ),
    };
    let slow = 1;
    const sink = databaseSink<{ v: number }>({
      name: table,
      source: broker.source('in'),
      database: hanging,
      transactionTimeoutMs: 2_000,
      retryDelayMs: 1,
      into: eachBatch<{ v: number }>({
        apply: async (tx, batch) => {
          for (const m of batch.messages) {
            await tx.query(`INSERT INTO ${table} VALUES ($1, $2)`, [
              m.offset.toString(),
              m.value.v,
            ]);
          }
          // The first time, a statement that never ends (a server that stopped answering).
          await tx.query(slow-- > 0 ? HANGS : 'SELECT 1');
        },
      }),
    });
    const retries = collect(sink, 'retry');
    expect((await sink.run({ untilCaughtUp: true })).retries).toBe(1);
    expect(retries[0]?.error).toMatchObject({ stage: 'timeout', retriable: true, firstOffset: 0n });
    expect((retries[0]?.error as Error).message).toContain('transactionTimeoutMs (2000 ms)');
    expect(await tableOf(table)).toEqual(expected([1, 2, 3]));
  });

  it('stops after maxRetries retriable errors in a row', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3]);
    const database = faultyDatabase(db, () => ({ when: 'before', error: sqlError('40001') }));
    const sink = sinkInto(table, {
      source: broker.source('in'),
      database,
      maxRetries: 2,
      retryDelayMs: 1,
    });
    await expect(sink.run({ untilCaughtUp: true })).rejects.toMatchObject({
      stage: 'retries',
      retriable: false,
      firstOffset: 0n,
      lastOffset: 2n,
    });
    expect(database.batches).toBe(3);
    expect(await tableOf(table)).toEqual([]);
  });
});

describe('databaseSink: running', () => {
  it('tells its checkpoint, the stream end and the lag of each stream', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3]);
    const sink = sinkInto(table, { source: broker.source('in') });
    expect(await sink.positions()).toEqual([
      { stream: 'in', checkpoint: -1n, endOffset: 3n, lag: 3n },
    ]);
    await sink.run({ untilCaughtUp: true });
    appendJson(broker, 'in', [{ v: 4 }, { v: 5 }]);
    expect(await sink.positions()).toEqual([
      { stream: 'in', checkpoint: 2n, endOffset: 5n, lag: 2n },
    ]);
  });

  it('runs under runUntilSignal like a job, which closes it', async () => {
    const table = await freshTable();
    const broker = brokerWith([1, 2, 3]);
    const sink = sinkInto(table, { source: broker.source('in') });
    let closed = false;
    const summary = await runUntilSignal(sink, {
      untilCaughtUp: true,
      close: async () => {
        await sink.close();
        closed = true;
      },
    });
    expect(summary).toMatchObject({ applied: 3, transactions: 1 });
    expect(closed).toBe(true);
  });

  it('close() stops a run waiting for messages and closes the database port', async () => {
    const table = await freshTable();
    const broker = brokerWith([1]);
    let closed = 0;
    const inner = pglite(db);
    const sink = sinkInto(table, {
      source: broker.source('in'),
      database: {
        ...inner,
        close: () => {
          closed++;
          return Promise.resolve();
        },
      },
    });
    const stopped = collect(sink, 'stopped');
    const run = sink.run();
    await new Promise<void>((resolve) => sink.on('applied', () => resolve()));
    await sink.close();
    expect(await run).toMatchObject({ applied: 1 });
    expect(closed).toBe(1);
    expect(stopped).toHaveLength(1);
    await expect(sink.run()).rejects.toBeInstanceOf(ConfigError);
  });

  it('refuses a second run while one is under way', async () => {
    const table = await freshTable();
    const broker = brokerWith([1]);
    const sink = sinkInto(table, { source: broker.source('in') });
    const stop = new AbortController();
    const applied = new Promise<void>((resolve) => sink.on('applied', () => resolve()));
    const run = sink.run({ signal: stop.signal });
    await expect(sink.run()).rejects.toThrow(/^run must not be called while the sink runs/);
    await applied;
    stop.abort();
    await run;
    expect((await sink.run({ untilCaughtUp: true })).applied).toBe(0);
  });

  it('checks its options with ConfigError, naming the option', () => {
    const broker = brokerWith([]);
    const base = {
      name: 's',
      source: broker.source('in'),
      database: pglite(db),
      into: eachBatch({ apply: () => Promise.resolve() }),
    };
    expect(() => databaseSink({ ...base, name: '' })).toThrow(/^name must be a non-empty string/);
    // Its checkpoint row is claimed by a statement holding the name as a literal.
    expect(() => databaseSink({ ...base, name: 'a\0b' })).toThrow(
      /^name must not hold a NUL character/,
    );
    expect(() => databaseSink({ ...base, maxBatchMessages: 0 })).toThrow(ConfigError);
    expect(() => databaseSink({ ...base, maxBatchDelayMs: -1 })).toThrow(/maxBatchDelayMs/);
    expect(() => databaseSink({ ...base, checkpointTable: 'a.b.c' })).toThrow(
      /checkpointTable must be 'table' or 'schema.table'/,
    );
    expect(() => databaseSink({ ...base, onError: { deadLetterTable: '' } })).toThrow(
      /deadLetterTable/,
    );
    expect(() => databaseSink({ ...base, maxRetries: -1 })).toThrow(/maxRetries/);
  });

  it('quotes its table names: any name is taken literally', async () => {
    const broker = brokerWith([1]);
    const sink = databaseSink({
      name: 'quoted',
      source: broker.source('in'),
      database: pglite(db),
      checkpointTable: 'Odd "Name"; DROP TABLE x',
      into: eachBatch({ apply: () => Promise.resolve() }),
    });
    await sink.run({ untilCaughtUp: true });
    expect(
      await rows(db, `SELECT last_offset::text AS o FROM "Odd ""Name""; DROP TABLE x"`),
    ).toEqual([{ o: '0' }]);
  });
});
