// The billing example's input: metered usage of some customers (four by default) over a few
// hours, the same on every run. Money is integer cents, never a float: 0.1 + 0.2 is not 0.3 in binary floating
// point, and a bill must add up to the cent. Sums of integers stay exact in a JS number up to
// 2^53 cents (about 90 trillion dollars); the table stores them as bigint.

export interface UsageEvent {
  readonly customer: string;
  /** What the usage costs, in whole cents. */
  readonly cents: number;
  /** When it happened, epoch ms: the job's event time (not when it was written). */
  readonly at: number;
}

/** The default run's customers; a larger run adds `customer5`, `customer6`, and so on. */
export const CUSTOMERS = ['acme', 'globex', 'initech', 'umbrella'] as const;
export const HOURS = 6;
const START = Date.UTC(2026, 0, 1, 0, 0, 0);
const EVERY_MS = 5 * 60_000;
/** A meter's delay at most: how far out of order in event time the stream gets. */
const MAX_DISORDER_MS = 90_000;

/** The names of `count` customers: those of {@link CUSTOMERS} first, then `customer<n>`. */
export function customerNames(count: number = CUSTOMERS.length): string[] {
  return Array.from({ length: count }, (_, i) => CUSTOMERS[i] ?? `customer${i + 1}`);
}

/**
 * Every 5 minutes each of `customers` customers reports its usage since the last report: 1 to
 * 2,500 cents, time stamped up to 90 s late, so the stream is slightly out of order in event
 * time. Deterministic (the MINSTD sequence, exact in a JS number), so every run bills the same.
 */
export function usageEvents(customers: number = CUSTOMERS.length): UsageEvent[] {
  const names = customerNames(customers);
  let seed = 20_261_202;
  const next = (bound: number) => {
    seed = (seed * 48_271) % 2_147_483_647;
    return seed % bound;
  };
  const events: UsageEvent[] = [];
  for (let at = START; at < START + HOURS * 3_600_000; at += EVERY_MS) {
    for (const customer of names) {
      events.push({ customer, cents: 1 + next(2_500), at: at + next(MAX_DISORDER_MS + 1) });
    }
  }
  return events;
}

/** 'YYYY-MM-DD HH:MM' (UTC) of the hour an instant falls in: how the example prints hours. */
export function hourOf(ms: number): string {
  return new Date(ms - (ms % 3_600_000)).toISOString().slice(0, 16).replace('T', ' ');
}

/** Cents and events per 'customer hour', straight from the events: what the bill must say. */
export function totalsFromEvents(
  events: readonly UsageEvent[],
): Map<string, { cents: bigint; events: number }> {
  const totals = new Map<string, { cents: bigint; events: number }>();
  for (const { customer, cents, at } of events) {
    const key = `${customer} ${hourOf(at)}`;
    const total = totals.get(key) ?? { cents: 0n, events: 0 };
    totals.set(key, { cents: total.cents + BigInt(cents), events: total.events + 1 });
  }
  return totals;
}
