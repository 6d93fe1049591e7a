// A part of the orders example's chain in this process, as on the embedded broker (it lives in
// this process, so no other process could reach it): a kill is a crash at a random publish
// (the relay, the job) or a random write (the sink), before it or after it reached the
// broker or the database, as examples/billing.ts crashes. After a crash nothing of the
// instance runs any more, and a fresh one starts.
import { crashingDatabase } from '../billing/crashing-database.js';
import { crashingTarget, DemoCrash } from '../crashing-target.js';
import { chainLane, type ChainLane } from './chain-lane.js';
import {
  chainPart,
  chainTables,
  type ChainServers,
  type PartFaults,
  type Role,
} from './orders-chain.js';

/** A crash planned for an instance: where it comes, as printed, and the fault that makes it. */
interface Crash {
  readonly description: string;
  readonly faults: PartFaults;
}

/**
 * The highest publish or write a crash comes at: the relay publishes a row at a time (hundreds),
 * the job an hour at a time and the sink a result at a time (seven hours close while the orders
 * come in), so that every planned crash comes before the orders end.
 */
const LATEST = { relay: 120, job: 2, sink: 2 } as const;

export function crashingLane(role: Role, servers: ChainServers, random: () => number): ChainLane {
  return chainLane(role, async (kill, stop) => {
    const crash = kill ? plannedCrash(role, servers, random) : undefined;
    const part = chainPart(role, servers, crash?.faults);
    try {
      await part.run({ signal: stop });
      return undefined;
    } catch (error) {
      const crashed = error instanceof DemoCrash || (error as Error).cause instanceof DemoCrash;
      if (crash === undefined || !crashed) throw error;
      return crash.description;
    } finally {
      await part.close();
    }
  });
}

function plannedCrash(role: Role, servers: ChainServers, random: () => number): Crash {
  const at = 1 + Math.floor(random() * LATEST[role]);
  const before = random() < 0.5;
  if (role === 'sink') {
    const point = before ? 'before-commit' : 'after-commit';
    // The revenue table as the sink's SQL names it: "schema"."table".
    const table = chainTables(servers.place)
      .revenue.split('.')
      .map((name) => `"${name}"`)
      .join('.');
    return {
      description: `${before ? 'before' : 'after'} committing write ${at}`,
      faults: { database: (database) => crashingDatabase(database, table, at, point) },
    };
  }
  const point = before ? 'before-publish' : 'after-publish';
  return {
    description: `${before ? 'before' : 'after'} publish ${at}`,
    faults: { target: (target) => crashingTarget(target, at, point) },
  };
}
