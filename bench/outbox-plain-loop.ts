// The outbox bench's baseline (bench/outbox.ts): the usual at-least-once relay, written by
// hand, reading as many rows at a time and sleeping as long when idle as the outbox relay does
// by default.
import type pg from 'pg';
import type { Client, Publisher } from 'rabbitmq-stream-js-client';
import { DEFAULT_MAX_BATCH_ROWS, DEFAULT_POLL_INTERVAL_MS } from '../src/outbox/outbox-relay.js';
import { cpuClock } from './measure.js';
import type { Round } from './outbox-round.js';
import { nowMs, type Written } from './outbox-writers.js';

/** A row as the plain loop selects it. */
interface PlainRow {
  readonly id: string;
  readonly key: string;
  readonly headers: Record<string, string>;
  readonly content_type: string;
  readonly body: Buffer;
}

/**
 * The usual at-least-once relay, written by hand: select the unpublished rows in id order,
 * publish each with the stock client's producer, wait for every confirm, mark them published.
 * One producer for every round (its confirms come on its connection, one listener).
 */
export class PlainLoop {
  private readonly waiting = new Map<bigint, { resolve: () => void; reject: (e: Error) => void }>();
  /** Confirms that came before their publish was registered. */
  private readonly early = new Set<bigint>();

  private constructor(
    private readonly publisher: Publisher,
    private readonly pool: pg.Pool,
    private readonly table: string,
  ) {
    publisher.on('publish_confirm', (error, ids) => {
      for (const id of ids) {
        const waiter = this.waiting.get(id);
        if (waiter === undefined) {
          this.early.add(id);
          continue;
        }
        this.waiting.delete(id);
        if (error === null) waiter.resolve();
        else waiter.reject(new Error(`the broker refused publishing id ${id}: code ${error}`));
      }
    });
  }

  static async start(
    stock: Client,
    stream: string,
    pool: pg.Pool,
    table: string,
  ): Promise<PlainLoop> {
    return new PlainLoop(await stock.declarePublisher({ stream }), pool, table);
  }

  /** Runs the loop until `rows` rows are confirmed, while `write` commits them. */
  async round(rows: number, write: () => Promise<Written>): Promise<Round> {
    const client = await this.pool.connect();
    try {
      /** Each row's transaction tag, and when its batch was confirmed. */
      const confirmed: [tag: string, at: number][] = [];
      const cpu = cpuClock();
      const writing = write();
      let failed: Error | undefined;
      writing.catch((error: unknown) => (failed = error as Error));
      let last = Number.NaN;
      while (confirmed.length < rows) {
        const { rows: batch } = await client.query<PlainRow>(
          `SELECT id::text AS id, key, headers, content_type, body FROM ${this.table} ` +
            `WHERE NOT published ORDER BY id LIMIT ${DEFAULT_MAX_BATCH_ROWS}`,
        );
        if (batch.length === 0) {
          if (failed !== undefined) throw failed;
          await new Promise((resolve) => setTimeout(resolve, DEFAULT_POLL_INTERVAL_MS));
          continue;
        }
        const confirms: Promise<void>[] = [];
        for (const row of batch) {
          const { publishingId } = await this.publisher.send(row.body, {
            applicationProperties: { ...row.headers, key: row.key },
            messageProperties: { contentType: row.content_type },
          });
          confirms.push(this.confirmOf(publishingId));
        }
        await this.publisher.flush();
        await Promise.all(confirms);
        last = nowMs();
        for (const row of batch) confirmed.push([row.headers['bench-tx'] ?? '', last]);
        await client.query(
          `UPDATE ${this.table} SET published = true WHERE id = ANY($1::bigint[])`,
          [batch.map((row) => row.id)],
        );
      }
      const cpuMs = cpuClock() - cpu;
      const written = await writing;
      const committedAt = new Map(written.commits);
      return {
        wallMs: last - written.startedAt,
        cpuMs,
        writeMs: written.endedAt - written.startedAt,
        latenciesMs: confirmed.map(([tag, at]) => at - (committedAt.get(tag) ?? Number.NaN)),
        waits: 0,
        foreignWaits: 0,
        waitedMs: 0,
      };
    } finally {
      client.release();
    }
  }

  private confirmOf(id: bigint): Promise<void> {
    if (this.early.delete(id)) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiting.set(id, { resolve, reject }));
  }
}
