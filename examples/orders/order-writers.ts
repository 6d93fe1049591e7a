// The orders example's input: a shop's orders over one business day, the same on every run,
// placed by concurrent writers. Each order is ONE transaction: its row in the `orders` table
// and its outbox row (writeOutbox) commit together, or, when its payment is declined, roll back
// together. Money is integer cents, never a float.
import {
  OutboxOrderError,
  writeOutbox,
  type SinkDatabase,
  type SinkTransaction,
} from '../../src/index.js';

export const REGIONS = ['east', 'north', 'south', 'west'] as const;
/** The business day: 09:00 to 17:00 UTC, an order every 30 s (960 orders). */
export const OPENING = Date.UTC(2026, 2, 2, 9);
export const HOURS = 8;
const EVERY_MS = 30_000;

export interface Order {
  readonly id: number;
  readonly region: string;
  /** What it costs, in whole cents. */
  readonly cents: number;
  /** When it was placed, epoch ms: the job's event time (not when it reached the stream). */
  readonly placedAt: number;
}

export interface PlannedOrder extends Order {
  /** Its payment is declined: the transaction writes both rows, then rolls back. */
  readonly declined: boolean;
}

/**
 * The day's orders, in the order they are placed: a region, $1.00 to $500.00, a time inside
 * its 30-second slot, and one in eight declined. Deterministic (the MINSTD sequence, exact in a
 * JS number), so which orders commit is the same on every run, however the writers interleave.
 */
export function plannedOrders(): PlannedOrder[] {
  let seed = 20_260_302;
  const next = (bound: number) => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed % bound;
  };
  return Array.from({ length: (HOURS * 3_600_000) / EVERY_MS }, (_, i) => ({
    id: i + 1,
    region: REGIONS[next(REGIONS.length)] as string,
    cents: 100 + next(49_901),
    placedAt: OPENING + i * EVERY_MS + next(EVERY_MS),
    declined: next(8) === 0,
  }));
}

/** How the writers place orders. */
export interface WritersOptions {
  /** Writers at once (each its own transaction; on PGlite they take turns, it is one connection). */
  readonly writers: number;
  /** The business table and the outbox table, schema-qualified. */
  readonly ordersTable: string;
  readonly outboxTable: string;
  /** A writer's pause before its next order, ms. */
  readonly pauseMs: () => number;
  /** How long a transaction stays open after its writes, before it commits or rolls back, ms. */
  readonly commitDelayMs: () => number;
}

/** What the writers did. */
export interface Written {
  readonly committed: number;
  readonly rolledBack: number;
  /** Transactions run again: the outbox refused a key's order, or PostgreSQL aborted one. */
  readonly retried: number;
  /** From the first order to the last. */
  readonly elapsedMs: number;
}

/** Why a transaction rolled back on purpose. */
class PaymentDeclined extends Error {}

/** PostgreSQL aborted the transaction (a deadlock, a serialization failure): nothing of it holds. */
const abortedForOrder = (error: unknown) =>
  ['40P01', '40001'].includes(String((error as { code?: unknown } | null)?.code));

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Places `orders` with `options.writers` concurrent writers through `database`. */
export async function placeOrders(
  database: SinkDatabase,
  orders: readonly PlannedOrder[],
  options: WritersOptions,
): Promise<Written> {
  const began = performance.now();
  const counts = { committed: 0, rolledBack: 0, retried: 0 };
  let next = 0;
  const placeOne = async (planned: PlannedOrder, tx: SinkTransaction): Promise<void> => {
    const { declined, ...order } = planned;
    await tx.query(
      `INSERT INTO ${options.ordersTable} (id, region, cents, placed_at) VALUES ($1, $2, $3, $4)`,
      [order.id, order.region, order.cents, new Date(order.placedAt).toISOString()],
    );
    await writeOutbox(
      tx,
      { key: order.region, eventTime: order.placedAt, json: order },
      { table: options.outboxTable },
    );
    const delay = options.commitDelayMs();
    if (delay > 0) await pause(delay);
    if (declined) throw new PaymentDeclined(`order ${order.id} declined`);
  };
  const writer = async (): Promise<void> => {
    for (let order = orders[next++]; order !== undefined; order = orders[next++]) {
      await pause(options.pauseMs());
      // As a service would: a transaction refused for a key's order, or a deadlock, runs again.
      for (;;) {
        try {
          await database.transaction((tx) => placeOne(order, tx));
          counts.committed++;
          break;
        } catch (error) {
          if (error instanceof PaymentDeclined) {
            counts.rolledBack++;
            break;
          }
          if (!(error instanceof OutboxOrderError) && !abortedForOrder(error)) throw error;
          counts.retried++;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: options.writers }, writer));
  return { ...counts, elapsedMs: performance.now() - began };
}
