import { describe, expect, it } from 'vitest';
import {
  aggregate,
  ConfigError,
  decodeResult,
  jsonMessage,
  lastWriteId,
  partitionFor,
  superStreamTarget,
  type Target,
} from '../../../src/index.js';
import { MemoryBroker, SimulatedCrash, type FaultPoint } from '../../../src/memory/index.js';

interface Sale {
  readonly shop: string;
  readonly amount: number;
}

const SHOPS = ['paris', 'lyon', 'nantes', 'lille', 'nice', 'brest'];

/** A 'sales' stream of `count` sales over six shops, one per chunk, and a 3-partition 'totals' super stream. */
function salesBroker(count: number): MemoryBroker {
  const broker = new MemoryBroker({ now: () => 0 });
  broker.createStream('sales');
  broker.createSuperStream('totals', { partitions: 3 });
  for (let i = 0; i < count; i++) {
    broker.append('sales', [jsonMessage({ shop: SHOPS[(i * 7) % SHOPS.length], amount: i })], {
      timestamp: 0,
    });
  }
  return broker;
}

function totalsTarget(broker: MemoryBroker, producer = 'totals-job'): Target {
  return superStreamTarget(
    broker.partitions('totals').map((stream) => broker.target(stream, { producer })),
    { superStream: 'totals' },
  );
}

/** Two sales per step, keyed by shop; each step's result routed by its first output's key. */
function salesJob(broker: MemoryBroker, target: Target = totalsTarget(broker)) {
  return aggregate<Sale>(broker.source('sales'))
    .count(2)
    .key((sale) => sale.shop)
    .reduce((sum, sale) => sum + sale.amount, 0)
    .to(target, { route: (result) => String(result.outputs[0]?.key), retryDelayMs: 0 });
}

/** Every partition's messages, as bytes, in partition order. */
function totals(broker: MemoryBroker): Uint8Array[][] {
  return broker.partitions('totals').map((stream) => broker.messages(stream).map((m) => m.bytes));
}

describe('a super-stream target', () => {
  it("writes each step's one result to the partition the clients' hash routing picks for its routing key", async () => {
    const broker = salesBroker(24);
    await salesJob(broker).run({ untilCaughtUp: true });
    const partitions = broker.partitions('totals');
    let results = 0;
    for (const stream of partitions) {
      for (const chunk of broker.chunks(stream)) {
        expect(chunk.messages).toHaveLength(1); // one write per step
        expect(chunk.writer?.producer).toBe('totals-job');
        const result = decodeResult(chunk.messages[0]?.bytes ?? new Uint8Array());
        expect(partitionFor(String(result.outputs[0]?.key), partitions)).toBe(stream);
        expect(chunk.writer?.publishingId).toBe(lastWriteId(result.lastOffset));
        results++;
      }
    }
    expect(results).toBe(12);
    // The keys spread: more than one partition holds results.
    expect(totals(broker).filter((messages) => messages.length > 0).length).toBeGreaterThan(1);
  });

  it('resumes from the highest last publishing id across partitions', async () => {
    const broker = salesBroker(12);
    await salesJob(broker).run({ untilCaughtUp: true });
    const highest = broker
      .partitions('totals')
      .map((stream) => broker.chunks(stream).at(-1)?.writer?.publishingId ?? 0n)
      .reduce((a, b) => (a > b ? a : b));
    expect(highest).toBe(lastWriteId(11n));
    const job = salesJob(broker);
    const started: bigint[] = [];
    job.on('started', (event) => started.push(event.lastPublishingId));
    for (let i = 12; i < 16; i++)
      broker.append('sales', [jsonMessage({ shop: 'paris', amount: i })]);
    await expect(job.run({ untilCaughtUp: true })).resolves.toMatchObject({
      results: 2,
      duplicates: 0,
    });
    expect(started).toEqual([lastWriteId(11n)]);
  });

  it("tells another producer name's highest last publishing id across partitions", async () => {
    const broker = salesBroker(12);
    await salesJob(broker).run({ untilCaughtUp: true });
    const other = totalsTarget(broker, 'other-job');
    expect(await other.lastPublishingIdOf?.('totals-job')).toBe(lastWriteId(11n));
    expect(await totalsTarget(broker).lastPublishingIdOf?.('never-published')).toBe(0n);
  });

  it.each<FaultPoint>(['before-publish', 'after-publish', 'after-confirm', 'lose-confirm'])(
    'loses and duplicates nothing across partitions through a crash at %s',
    async (point) => {
      const expected = salesBroker(24);
      await salesJob(expected).run({ untilCaughtUp: true });
      const broker = salesBroker(24);
      // The crash hits the fourth result stored on whichever partition gets it.
      for (const stream of broker.partitions('totals')) {
        broker.injectFault({ stream, atPublish: 2, point });
      }
      await salesJob(broker)
        .run({ untilCaughtUp: true })
        .catch((error: unknown) => {
          if (!(error instanceof SimulatedCrash)) throw error;
        });
      broker.clearFaults();
      await salesJob(broker).run({ untilCaughtUp: true });
      expect(totals(broker)).toEqual(totals(expected));
    },
  );

  it('keeps at most one result unconfirmed across the super stream, and refuses any other maxInFlight', async () => {
    const broker = salesBroker(12);
    const job = salesJob(broker);
    let most = 0;
    job.on('published', () => (most = Math.max(most, job.inFlight + 1)));
    await job.run({ untilCaughtUp: true });
    expect(most).toBe(1);
    expect(() =>
      aggregate<Sale>(broker.source('sales'))
        .count(2)
        .reduce((sum, sale) => sum + sale.amount, 0)
        .to(totalsTarget(broker), { route: () => 'k', maxInFlight: 4 }),
    ).toThrow(
      new ConfigError(
        'maxInFlight',
        'must be 1 with a super-stream target (at most one unconfirmed result across its partitions)',
        4,
      ),
    );
  });

  it('needs a route, which a single-stream target refuses', () => {
    const broker = salesBroker(0);
    broker.createStream('one');
    const builder = aggregate<Sale>(broker.source('sales'))
      .count(2)
      .reduce((sum, sale) => sum + sale.amount, 0);
    expect(() => builder.to(totalsTarget(broker))).toThrow(
      "route is needed by super-stream target 'totals'",
    );
    expect(() => builder.to(broker.target('one', { producer: 'p' }), { route: () => 'k' })).toThrow(
      "route applies to a super-stream target only, not to stream 'one'",
    );
  });

  it('refuses partition targets under different producer names: they would resume apart', () => {
    const broker = salesBroker(0);
    const [first = '', second = ''] = broker.partitions('totals');
    expect(() =>
      superStreamTarget(
        [broker.target(first, { producer: 'a' }), broker.target(second, { producer: 'b' })],
        { superStream: 'totals' },
      ),
    ).toThrow(new ConfigError('partitions', 'must share one producer name', ['a', 'b']));
  });
});
