import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { jobMetrics, sinkMetrics } from '../../../src/metrics/index.js';
import { pglite } from '../../../src/pglite/index.js';
import { databaseSink } from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import { countJob, brokerWithCountedReadings } from '../../support/jobs/memory-job.js';
import {
  appendJson,
  faultyDatabase,
  sqlError,
  pgliteForTests,
} from '../../support/jobs/sink-fixture.js';

const db = pgliteForTests();

/** The value of each series of `name` whose labels include `labels` (as printed). */
async function values(registry: Registry, name: string, labels = ''): Promise<number[]> {
  return (await registry.metrics())
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
}

function sinkOn(broker: MemoryBroker, name: string, database = pglite(db)) {
  return databaseSink({
    name,
    source: broker.source('in'),
    database,
    maxBatchMessages: 2,
    maxBatchDelayMs: 0,
    retryDelayMs: 1,
    into: eachBatch({ apply: () => Promise.resolve() }),
  });
}

describe('sinkMetrics', () => {
  it('counts applied messages, transactions, retries and their time, and reads the lag at scrape', async () => {
    const broker = new MemoryBroker();
    broker.createStream('in');
    appendJson(broker, 'in', [1, 2, 3, 4, 5]);
    const registry = new Registry();
    const sink = sinkOn(
      broker,
      'metered',
      faultyDatabase(db, (n) =>
        n === 1 ? { when: 'before', error: sqlError('40001') } : undefined,
      ),
    );
    const metrics = sinkMetrics(sink, { registry });
    expect(await values(registry, 'stream_windows_sink_lag_messages', 'stream="in"')).toEqual([5]);
    await sink.run({ untilCaughtUp: true });
    const of = 'sink="metered",stream="in"';
    expect(await values(registry, 'stream_windows_sink_messages_applied_total', of)).toEqual([5]);
    expect(await values(registry, 'stream_windows_sink_messages_skipped_total', of)).toEqual([0]);
    expect(await values(registry, 'stream_windows_sink_transactions_total')).toEqual([3]);
    expect(await values(registry, 'stream_windows_sink_retries_total')).toEqual([1]);
    expect(await values(registry, 'stream_windows_sink_transaction_seconds_count')).toEqual([3]);
    expect(await values(registry, 'stream_windows_sink_lag_messages', of)).toEqual([0]);
    appendJson(broker, 'in', [6, 7]);
    expect(await values(registry, 'stream_windows_sink_lag_messages', of)).toEqual([2]);
    metrics.close();
    expect(await registry.metrics()).not.toContain('stream_windows_sink_');
  });

  it("shares a registry with other sinks and with a job's metrics; a name twice is refused", async () => {
    const broker = new MemoryBroker();
    broker.createStream('in');
    const registry = new Registry();
    const one = sinkMetrics(sinkOn(broker, 'one'), { registry });
    const two = sinkMetrics(sinkOn(broker, 'two'), { registry });
    const memory = brokerWithCountedReadings(1);
    const job = jobMetrics(countJob(memory), { registry });
    expect(() => sinkMetrics(sinkOn(broker, 'one'), { registry })).toThrow(ConfigError);
    expect(await values(registry, 'stream_windows_sink_transactions_total')).toEqual([0, 0]);
    one.close();
    expect(await values(registry, 'stream_windows_sink_transactions_total')).toEqual([0]);
    two.close();
    job.close();
    expect(await registry.metrics()).toBe('\n');
  });
});
