// The orders example's check: the revenue table the chain wrote against what the committed
// orders say, read from the orders table itself (a rolled-back order is not there), per region
// per hour: the number of orders and their sum in cents, exactly. Printed as one line an hour.
import { chainTables } from './orders-chain.js';
import { REGIONS } from './order-writers.js';
import type { OrdersServers } from './orders-servers.js';

interface Revenue {
  readonly region: string;
  /** 'YYYY-MM-DD HH:MM', UTC. */
  readonly hour: string;
  readonly orders: number;
  readonly cents: string;
}

/** Prints the report beside the committed orders; resolves whether they are equal. */
export async function checkReport(servers: OrdersServers): Promise<boolean> {
  const tables = chainTables(servers.place);
  const hourText = (column: string) =>
    `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')`;
  const committed = await servers.query<Revenue>(
    `SELECT region, ${hourText("date_trunc('hour', placed_at, 'UTC')")} AS hour, ` +
      `count(*)::int AS orders, sum(cents)::text AS cents FROM ${tables.orders} GROUP BY 1, 2`,
  );
  const reported = await servers.query<Revenue>(
    `SELECT key AS region, ${hourText('window_start')} AS hour, count AS orders, ` +
      `cents::text AS cents FROM ${tables.revenue}`,
  );
  const [late] = await servers.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${tables.revenueLate}`,
  );
  const onStream = await servers.messages(servers.place.ordersStream);
  const byPlace = (rows: Revenue[]) =>
    new Map(rows.map((row) => [`${row.region} ${row.hour}`, row]));
  const want = byPlace(committed);
  const got = byPlace(reported);
  const hours = [...new Set([...committed, ...reported].map((row) => row.hour))].sort();

  console.log(`\nrevenue per region per hour (the report table), dollars, UTC`);
  console.log(`hour   ${REGIONS.map((region) => region.padStart(10)).join('')}   same`);
  const differences: string[] = [];
  for (const hour of hours) {
    const cells = REGIONS.map((region) => {
      const row = got.get(`${region} ${hour}`);
      const expected = want.get(`${region} ${hour}`);
      const same = row?.cents === expected?.cents && row?.orders === expected?.orders;
      if (!same) {
        differences.push(
          `${region} ${hour}: report ${describe(row)}, committed orders ${describe(expected)}`,
        );
      }
      return { same, text: (row === undefined ? '-' : dollars(BigInt(row.cents))).padStart(10) };
    });
    const same = cells.every((cell) => cell.same);
    console.log(
      `${hour.slice(11)}  ${cells.map((cell) => cell.text).join('')}   ${same ? 'yes' : 'NO'}`,
    );
  }
  for (const difference of differences) console.log(`  differs: ${difference}`);

  const total = (rows: Revenue[]) => rows.reduce((sum, row) => sum + BigInt(row.cents), 0n);
  const count = (rows: Revenue[]) => rows.reduce((sum, row) => sum + row.orders, 0);
  console.log(
    `\nreport: ${dollars(total(reported))} in ${count(reported)} orders; the committed ` +
      `orders: ${dollars(total(committed))} in ${count(committed)}; late orders: ${late?.n}; ` +
      `messages on the orders stream: ${onStream}`,
  );
  const equal =
    hours.length > 0 &&
    differences.length === 0 &&
    late?.n === 0 &&
    onStream === BigInt(count(committed));
  console.log(
    `report table equals the committed orders, per region per hour, to the cent: ${equal ? 'yes' : 'no'}`,
  );
  return equal;
}

function describe(row: Revenue | undefined): string {
  return row === undefined ? 'none' : `${row.orders} orders, ${row.cents} cents`;
}

/** Cents as dollars: 123456n is '1234.56'. */
function dollars(cents: bigint): string {
  return `${cents / 100n}.${String(cents % 100n).padStart(2, '0')}`;
}
