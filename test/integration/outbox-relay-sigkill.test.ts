// The outbox relay's acceptance test on PostgreSQL and RabbitMQ (issue 29). Eight services
// record orders and announce each with an outbox row in the same transaction (random commit
// delays from a seeded generator, some rolled back, one of 10,000 rows, two holding a gap open
// until relays said they wait for them) while the relay runs as a child process killed with
// SIGKILL at random moments, 30 times and more, and started again: at once after it handed a
// frame of rows to the broker (between the publish and its confirm), a random while after it
// resumed, or a random while after its spawn. Then the same with two relays of one name at
// once, each killed and restarted on its own; the relay in this process while its PostgreSQL
// sessions are ended again and again (what a server restart does to them: the shared server is
// not restarted, the other test files use it) and while its broker connection is cut between
// a publish the broker stored and its confirm; and a burst of 100,000 rows. Each time the
// stream must hold every committed row once and nothing else, each key's rows in commit order
// (../support/jobs/outbox-orders.ts), the producer's last id naming the table's last row.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFinished, vi } from 'vitest';
import type { RelayBroker } from '../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../src/outbox/outbox-table.js';
import { readRelayPublishingId } from '../../src/outbox/relay-publishing-id.js';
import { postgres } from '../../src/postgres/index.js';
import { connect } from '../../src/rabbitmq/connection.js';
import { parseStreamUrl } from '../../src/rabbitmq/connection-url.js';
import { seededRandom } from '../support/arbitraries/seeded-random.js';
import { postgresForTests } from '../support/brokers/postgres.js';
import { rabbitForTests, readAll } from '../support/brokers/rabbitmq.js';
import { startProxy } from '../support/brokers/tcp-proxy.js';
import { bundleChild, type BundledChild } from '../support/children/bundled-child.js';
import { startChild, type StartedChild } from '../support/children/killed-child.js';
import { watchedRelayBroker } from '../support/doubles/watched-relay-broker.js';
import { seenOutboxMessage, until } from '../support/jobs/outbox-fixture.js';
import {
  disturbedRelay,
  retryingRelay,
  type DisturbedRelayOptions,
  type DisturbedRun,
} from '../support/jobs/disturbed-relay.js';
import { OrderWriters } from '../support/jobs/outbox-orders.js';
import { bound } from '../support/timing.js';

/** SIGKILLs of the relay, at least, in each of the two kill tests. */
const KILLS = 30;
/** The services writing at once, and the keys their orders share. */
const WRITERS = 8;
const KEYS = ['k0', 'k1', 'k2', 'k3', 'k4', 'k5'];
/** Rows of the large transaction, over keys of its own. */
const LARGE = 10_000;
const BURST_TRANSACTIONS = 100;
const BURST_ROWS = 1_000;

const url = inject('rabbitmqUrl');
const rabbit = rabbitForTests();
const pgt = postgresForTests();
const SEED = Number(process.env.OUTBOX_SEED ?? Date.now() % 2 ** 31);

let bundle: BundledChild | undefined;
beforeAll(async () => {
  // A start in 0.2 s instead of 1.5 s under tsx: the kill tests start about 80 children.
  bundle = await bundleChild(fileURLToPath(new URL('./outbox-relay-child.ts', import.meta.url)));
}, bound(60_000));
afterAll(() => bundle?.dispose());

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The producer 'relay''s last publishing id on `stream`, asked on one target for the test. */
function storedOn(stream: string): () => Promise<bigint> {
  const watcher = rabbit.rabbit.target(stream, { producer: 'watcher' });
  onTestFinished(() => watcher.close());
  return () => watcher.lastPublishingIdOf('relay');
}

/** One relay child process (./outbox-relay-child.ts), its lines read as they come. */
class RelayProcess {
  readonly child: StartedChild;
  /** The publishing id its last start resumed from; undefined before it started. */
  resumedFrom: bigint | undefined;
  /** The last publishing id it handed to the broker, and the last it saw confirmed. */
  lastSent = 0n;
  lastConfirmed = 0n;
  sends = 0;
  /** Its `done` line (catch-up): rows, wall ms, CPU µs. */
  done: { rows: number; wallMs: number; cpuUs: number } | undefined;
  private line = '';

  constructor(
    table: string,
    stream: string,
    mode: 'run' | 'catch-up',
    onLine: (words: readonly string[]) => void = () => undefined,
  ) {
    const script = (bundle as BundledChild).path;
    this.child = startChild(script, [url, pgt.url, table, stream, mode], (mark) => {
      if (mark !== '\n') {
        this.line += mark;
        return;
      }
      const words = this.line.split(' ');
      this.line = '';
      this.read(words);
      onLine(words);
    });
  }

  /** It handed rows to the broker that it has not seen confirmed. */
  get inFlight(): boolean {
    return this.lastSent > this.lastConfirmed;
  }

  private read([what, a = '', b = '', c = '', d = '']: readonly string[]): void {
    if (what === 'started') {
      this.resumedFrom = BigInt(a);
      this.lastConfirmed = BigInt(a);
      this.lastSent = BigInt(a);
    } else if (what === 'sent') {
      this.sends++;
      this.lastSent = BigInt(a);
    } else if (what === 'published') {
      this.lastConfirmed = BigInt(b);
    } else if (what === 'done') {
      this.done = { rows: Number(a), wallMs: Number(b), cpuUs: Number(c) + Number(d) };
    }
  }
}

/** When a child is killed: at its n-th frame sent, a random while after it resumed or after its spawn. */
type Trigger = 'sent' | 'resumed' | 'spawn';

/** One SIGKILL and what it hit. */
interface Kill {
  readonly trigger: Trigger;
  /** Before it resumed, with rows sent and not seen confirmed, or otherwise (reading, waiting, idle). */
  readonly phase: 'starting' | 'in flight' | 'between batches';
  /** The stream held rows past the last confirm the relay saw. */
  readonly storedUnconfirmed: boolean;
  readonly resumedFrom: bigint | undefined;
}

/** A relay that reported it waits for an open transaction. */
interface WaitingReport {
  readonly process: RelayProcess;
  readonly txid: bigint;
}

/** A kill test: the services writing, the gaps, and relays killed and restarted meanwhile. */
class KilledRun {
  readonly kills: Kill[] = [];
  readonly waiting: WaitingReport[] = [];
  private readonly random = seededRandom(SEED);
  private readonly stored: () => Promise<bigint>;
  private writing = true;
  private gapsClosed = false;
  private stopped = false;

  constructor(
    readonly writers: OrderWriters,
    readonly table: string,
    readonly stream: string,
  ) {
    this.stored = storedOn(stream);
  }

  /** Runs `lanes` relays at once, each killed and restarted, with the services, until done. */
  async run(lanes: number): Promise<void> {
    const gaps = this.gaps().finally(() => (this.gapsClosed = true));
    const writing = Promise.all(Array.from({ length: WRITERS }, (_, w) => this.writer(w)));
    // Awaited below, once the kills are done: a failure meanwhile must not go unhandled.
    writing.catch(() => undefined);
    const killing = Array.from({ length: lanes }, () => this.lane());
    try {
      await Promise.all([gaps, ...killing]);
    } finally {
      // After a failure too: nothing may outlive the test (its pools end after it).
      this.stopped = true;
      await Promise.allSettled([gaps, ...killing]);
      this.writing = false;
      await writing;
    }
  }

  /**
   * The large transaction, holding every younger row back while it writes (seconds: the relays
   * are killed as they wait), then published under kills; once the stream is past it, two
   * transactions holding a gap open until relays said they wait for them.
   */
  private async gaps(): Promise<void> {
    const large = await this.writers.run({
      keys: Array.from({ length: LARGE }, (_, i) => `large-${i % 7}`),
      label: 'large',
    });
    await vi.waitFor(
      async () => expect(readRelayPublishingId(await this.stored())?.txid).toBeGreaterThan(large),
      { timeout: bound(120_000), interval: 50 },
    );
    await this.longTransaction('long-a');
    await this.longTransaction('long-b');
  }

  /** Kills until there were `KILLS` and the gaps were closed. */
  private async lane(): Promise<void> {
    while (!this.stopped && (this.kills.length < KILLS || !this.gapsClosed)) {
      this.kills.push(await this.killOne());
    }
  }

  /** Starts a relay and kills it at a moment of a random trigger's choosing. */
  private async killOne(): Promise<Kill> {
    const draw = this.random();
    const trigger: Trigger = draw < 0.4 ? 'sent' : draw < 0.8 ? 'resumed' : 'spawn';
    const nthSend = 1 + Math.floor(this.random() * 3);
    const delayMs = Math.floor(this.random() * (trigger === 'spawn' ? 800 : 500));
    let phase: Kill['phase'] | undefined;
    const timers: NodeJS.Timeout[] = [];
    const relay: RelayProcess = new RelayProcess(this.table, this.stream, 'run', (words) => {
      if (words[0] === 'waiting')
        this.waiting.push({ process: relay, txid: BigInt(words[1] ?? 0) });
      if (words[0] === 'sent' && trigger === 'sent' && relay.sends === nthSend) kill();
      if (words[0] === 'started') {
        if (trigger === 'resumed') timers.push(setTimeout(kill, delayMs));
        // One with too little to send (waiting behind a gap, say) is killed idle.
        timers.push(setTimeout(kill, 1_500));
      }
    });
    const kill = (): void => {
      if (phase !== undefined) return;
      phase =
        relay.resumedFrom === undefined
          ? 'starting'
          : relay.inFlight
            ? 'in flight'
            : 'between batches';
      relay.child.kill();
    };
    if (trigger === 'spawn') timers.push(setTimeout(kill, delayMs));
    // One that never starts is killed too (and counted as 'starting').
    timers.push(setTimeout(kill, bound(30_000)));
    try {
      expect(await relay.child.ended).toBe(true);
      await relay.child.read;
    } finally {
      for (const timer of timers) clearTimeout(timer);
    }
    const stored = await this.stored();
    return {
      trigger,
      phase: phase ?? 'starting',
      storedUnconfirmed: phase === 'in flight' && stored > relay.lastConfirmed,
      resumedFrom: relay.resumedFrom,
    };
  }

  /**
   * A transaction holding a gap open: it commits once two relay processes (a restarted one
   * too) said they wait for it, or for an older one, since it began.
   */
  private async longTransaction(label: string): Promise<void> {
    const from = this.waiting.length;
    await this.writers.run({
      keys: ['long'],
      label,
      holdUntil: (txid) =>
        until(
          () =>
            new Set(
              this.waiting
                .slice(from)
                .filter((report) => report.txid <= txid)
                .map((report) => report.process),
            ).size >= 2,
          bound(60_000),
          `two relays waiting for ${label} (txid ${txid})`,
        ),
    });
  }

  /** A service: transactions of 1-8 orders until the kills are done. */
  private async writer(w: number): Promise<void> {
    for (let t = 0; this.writing; t++) {
      const keys = Array.from(
        { length: 1 + Math.floor(this.random() * 8) },
        () => KEYS[Math.floor(this.random() * KEYS.length)] as string,
      );
      const slow = this.random() < 0.1;
      await this.writers.run({
        keys,
        label: `w${w}-t${t}`,
        rollback: this.random() < 0.15,
        commitDelayMs: Math.floor(this.random() * (slow ? 400 : 15)),
      });
      await pause(Math.floor(this.random() * 20));
    }
  }
}

/** Runs a relay child until it caught up; resolves with its `done` figures. */
async function catchUp(table: string, stream: string): Promise<RelayProcess['done']> {
  const relay = new RelayProcess(table, stream, 'catch-up');
  expect(await relay.child.ended).toBe(false);
  await relay.child.read;
  return relay.done;
}

/** Checks `stream` against the database (`OrderWriters.expectStream`). */
async function expectStream(writers: OrderWriters, stream: string): Promise<number> {
  const seen = (await readAll(rabbit.rabbit, stream)).map((bytes) => seenOutboxMessage(bytes));
  return writers.expectStream(seen, await storedOn(stream)());
}

/** How many `kills` came after a start that resumed inside a transaction (past its first row, before its last). */
async function resumedInsideTransactions(table: string, kills: readonly Kill[]): Promise<number> {
  let inside = 0;
  for (const { resumedFrom } of kills) {
    const place = resumedFrom === undefined ? undefined : readRelayPublishingId(resumedFrom);
    if (place === undefined) continue;
    const [row] = await pgt.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} WHERE txid = $1::xid8`,
      [place.txid.toString()],
    );
    if (place.index < (row?.n ?? 0) - 1) inside++;
  }
  return inside;
}

async function killTest(lanes: number, table: string): Promise<void> {
  const started = Date.now();
  const stream = await rabbit.newStream(table.replaceAll('_', '-'));
  const pool = pgt.pool({ max: WRITERS + 4 });
  await createOutboxTable(postgres(pool), table);
  const writers = new OrderWriters(pool, table);
  await writers.create();
  const run = new KilledRun(writers, table, stream);
  await run.run(lanes);
  const killedMs = Date.now() - started;
  const last = await catchUp(table, stream);
  const rows = await expectStream(writers, stream);

  const { kills } = run;
  const count = (predicate: (kill: Kill) => boolean): number => kills.filter(predicate).length;
  const inFlight = count((k) => k.phase === 'in flight');
  console.log(
    `outbox relay SIGKILL test, ${lanes} relay(s) at once (seed ${SEED}): ${kills.length} kills ` +
      `(${inFlight} with rows sent and not seen confirmed, ${count((k) => k.storedUnconfirmed)} ` +
      `of them leaving rows on the stream past the relay's last confirm; ` +
      `${count((k) => k.phase === 'between batches')} between batches, ` +
      `${count((k) => k.phase === 'starting')} while starting; ${count((k) => k.trigger === 'sent')} ` +
      `at a frame sent, ${count((k) => k.trigger === 'resumed')} after resuming, ` +
      `${count((k) => k.trigger === 'spawn')} after the spawn; ` +
      `${await resumedInsideTransactions(table, kills)} after resuming inside a transaction); ` +
      `${rows} rows from ${writers.committed} transactions (${writers.rolledBack} rolled back, ` +
      `${writers.retried} retried), ${run.waiting.length} waiting reports; writers and kills ` +
      `${killedMs} ms, the last relay ${last?.rows} rows in ${last?.wallMs} ms; ` +
      `whole test ${Date.now() - started} ms`,
  );
  expect(kills.length).toBeGreaterThanOrEqual(KILLS);
  expect(writers.rolledBack).toBeGreaterThan(0);
  expect(inFlight).toBeGreaterThanOrEqual(KILLS / 6);
  expect(rows).toBeGreaterThan(LARGE);
}

describe('the outbox relay killed with SIGKILL, on PostgreSQL and RabbitMQ', () => {
  it(
    `publishes each committed row once, each key in commit order, through ${KILLS} kills of its process`,
    () => killTest(1, 'outbox_kill'),
    bound(300_000),
  );

  it(
    `does so with two relays of one name at once, killed ${KILLS} times between them`,
    () => killTest(2, 'outbox_two'),
    bound(300_000),
  );
});

/**
 * `disturbedRelay` on this file's database and broker, the relay on a pool of its own whose
 * sessions are named `table`.
 */
async function disturbed(
  table: string,
  broker: RelayBroker,
  disrupt: DisturbedRelayOptions['disrupt'],
): Promise<DisturbedRun> {
  const stream = await rabbit.newStream(table.replaceAll('_', '-'));
  const relay = retryingRelay(pgt.pool({ max: 2, application_name: table }), broker, table, stream);
  const pool = pgt.pool({ max: 4 });
  return disturbedRelay({ pool, table, relay, reader: rabbit.rabbit, seed: SEED, disrupt });
}

describe('the outbox relay under database and broker failures', () => {
  it(
    "publishes each committed row once while its PostgreSQL sessions are ended again and again, as a server restart ends them, with 'retry' events",
    async () => {
      const table = 'outbox_pg_restart';
      let ended = 0;
      const { retries, rows } = await disturbed(table, rabbit.rabbit, async ({ published }) => {
        for (let round = 0; round < 40; round++) {
          // The relay may be between sessions (its pool reconnecting): each round ends at
          // least one, once there is one.
          let n = 0;
          const giveUp = Date.now() + bound(30_000);
          while (n === 0) {
            if (Date.now() > giveUp) throw new Error(`no relay session in round ${round}`);
            const [row] = await pgt.query<{ n: number }>(
              'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity ' +
                'WHERE datname = current_database() AND application_name = $1',
              [table],
            );
            n = row?.n ?? 0;
            if (n === 0) await pause(10);
          }
          ended += n;
          const before = published();
          await until(() => published() > before, bound(30_000), 'the relay to publish again');
        }
      });
      console.log(
        `outbox relay under pg_terminate_backend: ${ended} sessions ended in 40 rounds, ` +
          `${retries.length} retries, ${rows} rows`,
      );
      expect(ended).toBeGreaterThanOrEqual(40);
      expect(retries.length).toBeGreaterThan(0);
    },
    bound(180_000),
  );

  it(
    "publishes each committed row once while its broker connection is cut between a publish the broker stored and its confirm, and refused a while, with 'retry' events",
    async () => {
      const params = parseStreamUrl(url);
      const proxy = await startProxy(params);
      // Every connection through the proxy: a reconnection goes to the node's advertised address.
      const throughProxy = { host: '127.0.0.1', port: proxy.port };
      const viaProxy = await connect(
        { ...params, port: proxy.port },
        { initialDelayMs: 50, maxDelayMs: 200, addressResolver: () => throughProxy },
      );
      const table = 'outbox_cut';
      let stored: (() => Promise<bigint>) | undefined;
      let armed = false;
      let cuts = 0;
      try {
        const broker = watchedRelayBroker(viaProxy, (lastId) => {
          if (!armed) return;
          armed = false;
          // The broker stores the frame and confirms it; the confirm never reaches the relay
          // (the connection frozen, then cut), and the broker is unreachable for a while.
          proxy.freeze();
          const storedIt = vi.waitFor(
            async () => expect(await stored?.()).toBeGreaterThanOrEqual(lastId),
            { timeout: bound(30_000), interval: 5 },
          );
          void storedIt.then(() => {
            proxy.refuse();
            proxy.cut();
            cuts++;
            setTimeout(() => proxy.accept(), 200);
          });
        });
        const { retries, rows } = await disturbed(table, broker, async ({ relay, published }) => {
          stored = storedOn(relay.stream);
          for (let round = 0; round < 10; round++) {
            // A publish confirmed first: the producer is declared on this connection, and
            // the cut falls after the declaration (a frozen one waits out its timeout).
            const before = published();
            await until(() => published() > before, bound(30_000), 'the relay to publish');
            armed = true;
            await until(() => cuts > round, bound(30_000), 'a cut with a frame in flight');
          }
        });
        console.log(
          `outbox relay under broker cuts: ${cuts} cuts, ${retries.length} retries, ${rows} rows`,
        );
        expect(cuts).toBe(10);
        expect(retries.length).toBeGreaterThanOrEqual(cuts);
      } finally {
        await viaProxy.close();
        await proxy.close();
      }
    },
    bound(180_000),
  );
});

describe('a burst of rows', () => {
  it(
    `relays ${BURST_TRANSACTIONS * BURST_ROWS} rows committed in ${BURST_TRANSACTIONS} transactions, each once and in order`,
    async () => {
      const table = 'outbox_burst';
      const stream = await rabbit.newStream('outbox-burst');
      const pool = pgt.pool({ max: 4 });
      await createOutboxTable(postgres(pool), table);
      const writers = new OrderWriters(pool, table);
      await writers.create();
      let started = Date.now();
      let next = 0;
      await Promise.all(
        // Keys of each connection's own: its transactions do not wait for the others'.
        Array.from({ length: 4 }, async (_, w) => {
          for (let t = next++; t < BURST_TRANSACTIONS; t = next++) {
            const keys = Array.from({ length: BURST_ROWS }, (_, i) => `burst-${w}-${i % 3}`);
            await writers.run({ keys, label: `b${t}` });
          }
        }),
      );
      const writeMs = Date.now() - started;
      started = Date.now();
      const done = await catchUp(table, stream);
      const relayMs = Date.now() - started;
      const rows = await expectStream(writers, stream);
      const total = BURST_TRANSACTIONS * BURST_ROWS;
      const wallMs = done?.wallMs ?? NaN;
      console.log(
        `outbox relay burst: ${rows} rows written in ${writeMs} ms (writeOutbox, 4 connections), ` +
          `relayed by a relay process in ${wallMs} ms of its run() ` +
          `(${Math.round((total * 1000) / wallMs)} rows/s; ${relayMs} ms with its start), ` +
          `its CPU ${((done?.cpuUs ?? NaN) / total).toFixed(1)} µs per row`,
      );
      expect(rows).toBe(total);
      expect(done?.rows).toBe(total);
    },
    bound(300_000),
  );
});
