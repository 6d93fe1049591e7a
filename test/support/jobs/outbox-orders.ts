// The services of the outbox relay's crash tests on PostgreSQL: each transaction records orders
// (business rows) and announces each with an outbox row, in the one transaction. Every key is
// an account whose version each of its orders bumps under the account row's lock, held to the
// commit: so a key's versions number its committed orders in commit order, and a stream that
// holds each committed row once, each key in commit order, holds per key the versions 1, 2, …
// up to the account's, in that order. A rolled-back order gives its version back.
import type pg from 'pg';
import { expect } from 'vitest';
import { OutboxOrderError } from '../../../src/common/errors.js';
import { writeOutbox } from '../../../src/outbox/outbox-write.js';
import { relayPublishingId } from '../../../src/outbox/relay-publishing-id.js';
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

/** Services writing orders into `<table>_accounts`, `<table>_orders` and the outbox `table`. */
export class OrderWriters {
  /** Outbox row ids of the committed transactions. */
  readonly committedIds: bigint[] = [];
  readonly rolledBackLabels = new Set<string>();
  committed = 0;
  rolledBack = 0;
  /** Transactions run again after an `OutboxOrderError` or a deadlock. */
  retried = 0;
  private readonly accounts: string;
  private readonly orders: string;

  constructor(
    private readonly pool: pg.Pool,
    readonly table: string,
  ) {
    this.accounts = `${table}_accounts`;
    this.orders = `${table}_orders`;
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
   * order or PostgreSQL a deadlock. Resolves with its transaction id once it committed or
   * rolled back as told.
   */
  async run(transaction: OrderTransaction): Promise<bigint> {
    for (;;) {
      const client = await this.pool.connect();
      try {
        return await this.attempt(client, transaction);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        const code = (error as { code?: unknown }).code;
        if (!(error instanceof OutboxOrderError) && code !== '40P01') throw error;
        this.retried++;
      } finally {
        client.release();
      }
    }
  }

  private async attempt(client: pg.PoolClient, transaction: OrderTransaction): Promise<bigint> {
    const { label } = transaction;
    await client.query('BEGIN');
    const ids: bigint[] = [];
    const keys = [...transaction.keys].sort();
    let first = 0;
    while (first < keys.length) {
      const key = keys[first] as string;
      let count = 1;
      while (keys[first + count] === key) count++;
      // The account's row lock, held to the end: the next order of the key waits for this one.
      const { rows } = await client.query<{ base: string }>(
        `INSERT INTO ${this.accounts} AS a VALUES ($1, $2) ON CONFLICT (key) DO UPDATE ` +
          'SET version = a.version + EXCLUDED.version RETURNING (version - $2)::text AS base',
        [key, count],
      );
      const base = Number(rows[0]?.base);
      await client.query(
        `INSERT INTO ${this.orders} SELECT $1, $2::bigint + i, $3 || '-' || ($4::int + i) ` +
          'FROM generate_series(1, $5::int) AS i',
        [key, base, label, first - 1, count],
      );
      for (let i = 0; i < count; i++) {
        const event: OrderEvent = { key, version: base + i + 1, label: `${label}-${first + i}` };
        ids.push(await writeOutbox(client, { key, json: event }, { table: this.table }));
      }
      first += count;
    }
    const { rows } = await client.query<{ txid: string }>(
      'SELECT pg_current_xact_id()::text AS txid',
    );
    const txid = BigInt(rows[0]?.txid ?? -1);
    await transaction.holdUntil?.(txid);
    if (transaction.commitDelayMs !== undefined && transaction.commitDelayMs > 0) {
      await pause(transaction.commitDelayMs);
    }
    if (transaction.rollback === true) {
      await client.query('ROLLBACK');
      this.rolledBack++;
      for (let i = 0; i < keys.length; i++) this.rolledBackLabels.add(`${label}-${i}`);
    } else {
      await client.query('COMMIT');
      this.committed++;
      this.committedIds.push(...ids);
    }
    return txid;
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
      `SELECT id::text, key, convert_from(body, 'UTF8') AS body FROM ${this.table} ORDER BY txid, id`,
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
          `AS index FROM ${this.table} t ORDER BY txid DESC, id DESC LIMIT 1`,
      )
    ).rows;
    expect(lastPublishingId).toBe(
      last === undefined ? 0n : relayPublishingId({ txid: BigInt(last.txid), index: last.index }),
    );
    return committed.length;
  }
}
