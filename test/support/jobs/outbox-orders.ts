// The services of the outbox relay's crash tests on PostgreSQL: each transaction records orders
// (business rows) and announces each with an outbox row, in the one transaction. Every key is
// an account whose version each of its orders bumps under the account row's lock, held to the
// commit: so a key's versions number its committed orders in commit order, and a stream that
// holds each committed row once, each key in commit order, holds per key the versions 1, 2, …
// up to the account's, in that order. A rolled-back order gives its version back. A transaction
// the server's restart broke is looked up in the table once the server answers again (a COMMIT
// whose answer was lost may have committed) and run again only when it did not commit.
import type pg from 'pg';
import { expect } from 'vitest';
import { OutboxOrderError } from '../../../src/common/errors.js';
import type { SinkDatabase, SinkTransaction } from '../../../src/database/sink-database.js';
import { writeOutbox } from '../../../src/outbox/outbox-write.js';
import { relayPublishingId } from '../../../src/outbox/relay-publishing-id.js';
import { postgres } from '../../../src/postgres/index.js';
import { bound } from '../timing.js';
import { expectExactlyCommitted, type SeenOutboxMessage } from './outbox-fixture.js';

/** An outbox row's body: the order it announces. */
export interface OrderEvent {
  readonly key: string;
  readonly version: number;
  readonly label: string;
}

/** How one transaction goes. */
export interface OrderTransaction {
  /** Keys of its orders, one order each (written sorted, as a service avoiding deadlocks does). */
  readonly keys: readonly string[];
  /** Names its orders (`<label>-<i>`): a rolled-back label must never reach the stream. */
  readonly label: string;
  readonly rollback?: boolean;
  /** Pause before COMMIT (or ROLLBACK), ms: a gap held open meanwhile. */
  readonly commitDelayMs?: number;
  /** Resolves when the transaction may end: it holds a gap open until then. */
  readonly holdUntil?: (txid: bigint) => Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Thrown in a transaction to roll it back, as told. */
class RollBack extends Error {}

/** What one try of a transaction got to: its outbox rows and its transaction id. */
interface Attempt {
  readonly ids: bigint[];
  txid: bigint;
}

/** Services writing orders into `<table>_accounts`, `<table>_orders` and the outbox `table`. */
export class OrderWriters {
  /** Outbox row ids of the committed transactions. */
  readonly committedIds: bigint[] = [];
  readonly rolledBackLabels = new Set<string>();
  committed = 0;
  rolledBack = 0;
  /** Transactions run again after an `OutboxOrderError` or a deadlock. */
  retried = 0;
  /** Transactions a lost connection or a shutting-down server broke (then looked up in the table). */
  interrupted = 0;
  /** Of those, the ones the table holds: their COMMIT reached the server, its answer did not. */
  committedUnanswered = 0;
  private readonly accounts: string;
  private readonly orders: string;
  /** The pool through the sink's adapter: a connection breaking under a transaction is destroyed, not reused, and never ends the process. */
  private readonly database: SinkDatabase;

  constructor(
    private readonly pool: pg.Pool,
    readonly table: string,
  ) {
    this.accounts = `${table}_accounts`;
    this.orders = `${table}_orders`;
    this.database = postgres(pool);
  }

  /** Creates the business tables (the outbox table is the relay's: `createOutboxTable`). */
  async create(): Promise<void> {
    await this.pool.query(
      `CREATE TABLE ${this.accounts} (key text PRIMARY KEY, version bigint NOT NULL)`,
    );
    await this.pool.query(
      `CREATE TABLE ${this.orders} (key text NOT NULL, version bigint NOT NULL, ` +
        'label text NOT NULL, PRIMARY KEY (key, version))',
    );
  }

  /**
   * Runs `transaction` to its end, again (as a new transaction) when the outbox refuses a key's
   * order or PostgreSQL a deadlock, or when the server went away under it and the table, read
   * once it answers again, does not hold it. Resolves with its transaction id once it committed
   * or rolled back as told.
   */
  async run(transaction: OrderTransaction): Promise<bigint> {
    for (;;) {
      const attempt: Attempt = { ids: [], txid: -1n };
      try {
        await this.database.transaction((tx) => this.attempt(tx, transaction, attempt));
        this.commitOf(attempt);
        return attempt.txid;
      } catch (error) {
        if (error instanceof RollBack) {
          this.rolledBack++;
          for (let i = 0; i < transaction.keys.length; i++) {
            this.rolledBackLabels.add(`${transaction.label}-${i}`);
          }
          return attempt.txid;
        }
        const code = (error as { code?: unknown }).code;
        if (error instanceof OutboxOrderError || code === '40P01') {
          this.retried++;
          continue;
        }
        if (!this.database.isRetriable(error)) throw error;
        this.interrupted++;
        // Asked whatever it was to do: the answer waits for the server to be back.
        if (await this.holds(transaction.label)) {
          this.committedUnanswered++;
          this.commitOf(attempt);
          return attempt.txid;
        }
      }
    }
  }

  private commitOf(attempt: Attempt): void {
    this.committed++;
    this.committedIds.push(...attempt.ids);
  }

  /** Whether the orders table holds the transaction labelled `label`, asked until the server answers. */
  private async holds(label: string): Promise<boolean> {
    const giveUp = Date.now() + bound(60_000);
    for (;;) {
      try {
        const { rows } = await this.pool.query<{ held: boolean }>(
          `SELECT EXISTS (SELECT 1 FROM ${this.orders} WHERE label = $1) AS held`,
          [`${label}-0`],
        );
        return rows[0]?.held === true;
      } catch (error) {
        if (!this.database.isRetriable(error) || Date.now() > giveUp) throw error;
        await pause(50);
      }
    }
  }

  private async attempt(
    tx: SinkTransaction,
    transaction: OrderTransaction,
    attempt: Attempt,
  ): Promise<void> {
    const { label } = transaction;
    const keys = [...transaction.keys].sort();
    let first = 0;
    while (first < keys.length) {
      const key = keys[first] as string;
      let count = 1;
      while (keys[first + count] === key) count++;
      // The account's row lock, held to the end: the next order of the key waits for this one.
      const { rows } = await tx.query<{ base: string }>(
        `INSERT INTO ${this.accounts} AS a VALUES ($1, $2) ON CONFLICT (key) DO UPDATE ` +
          'SET version = a.version + EXCLUDED.version RETURNING (version - $2)::text AS base',
        [key, count],
      );
      const base = Number(rows[0]?.base);
      await tx.query(
        `INSERT INTO ${this.orders} SELECT $1, $2::bigint + i, $3 || '-' || ($4::int + i) ` +
          'FROM generate_series(1, $5::int) AS i',
        [key, base, label, first - 1, count],
      );
      for (let i = 0; i < count; i++) {
        const event: OrderEvent = { key, version: base + i + 1, label: `${label}-${first + i}` };
        attempt.ids.push(await writeOutbox(tx, { key, json: event }, { table: this.table }));
      }
      first += count;
    }
    const { rows } = await tx.query<{ txid: string }>('SELECT pg_current_xact_id()::text AS txid');
    attempt.txid = BigInt(rows[0]?.txid ?? -1);
    await transaction.holdUntil?.(attempt.txid);
    if (transaction.commitDelayMs !== undefined && transaction.commitDelayMs > 0) {
      await pause(transaction.commitDelayMs);
    }
    if (transaction.rollback === true) throw new RollBack();
  }

  /**
   * Checks the stream against the database: each committed outbox row once (the rows the table
   * holds, and exactly those the writers committed), nothing else, in (txid, id) order; per key
   * the versions 1 to the account's, in order, each the order the business table holds; no
   * rolled-back order; and the producer's last publishing id naming the table's last row.
   * Resolves with the rows.
   */
  async expectStream(
    seen: readonly SeenOutboxMessage[],
    lastPublishingId: bigint,
  ): Promise<number> {
    const { rows } = await this.pool.query<{ id: string; key: string; body: string }>(
      // t.txid, t.id: a bare name in ORDER BY is the output column, text here ('999' > '1051').
      `SELECT t.id::text AS id, key, convert_from(body, 'UTF8') AS body FROM ${this.table} t ` +
        'ORDER BY t.txid, t.id',
    );
    const committed = rows.map((row) => ({ id: BigInt(row.id), key: row.key, body: row.body }));
    expect(committed.length, 'rows in the table and rows the writers committed').toBe(
      this.committedIds.length,
    );
    expect(new Set(this.committedIds)).toEqual(new Set(committed.map((row) => row.id)));
    expectExactlyCommitted(seen, committed);

    const versions = new Map<string, number[]>();
    const announced = new Set<string>();
    for (const message of seen) {
      const event = JSON.parse(message.body.toString('utf8')) as OrderEvent;
      expect(this.rolledBackLabels.has(event.label), `rolled back: ${event.label}`).toBe(false);
      versions.set(event.key, [...(versions.get(event.key) ?? []), event.version]);
      announced.add(`${event.key} ${event.version} ${event.label}`);
    }
    const accounts = await this.pool.query<{ key: string; version: string }>(
      `SELECT key, version::text FROM ${this.accounts} ORDER BY key`,
    );
    for (const { key, version } of accounts.rows) {
      const expected = Array.from({ length: Number(version) }, (_, i) => i + 1);
      expect(versions.get(key) ?? [], `key '${key}' in commit order`).toEqual(expected);
    }
    expect([...versions.keys()].sort()).toEqual(accounts.rows.map((row) => row.key));
    const orders = await this.pool.query<{ order: string }>(
      `SELECT key || ' ' || version || ' ' || label AS order FROM ${this.orders}`,
    );
    expect(new Set(orders.rows.map((row) => row.order))).toEqual(announced);

    const [last] = (
      await this.pool.query<{ txid: string; index: number }>(
        `SELECT txid::text, (SELECT count(*)::int - 1 FROM ${this.table} o WHERE o.txid = t.txid) ` +
          `AS index FROM ${this.table} t ORDER BY t.txid DESC, t.id DESC LIMIT 1`, // as above
      )
    ).rows;
    expect(lastPublishingId).toBe(
      last === undefined ? 0n : relayPublishingId({ txid: BigInt(last.txid), index: last.index }),
    );
    return committed.length;
  }
}
