// relayMetrics on an outbox relay over PGlite and the embedded broker: rows and batches
// published, a retry, the backlog read at scrape time, to a stream and to a super stream; a
// registry shared with a job's and a sink's metrics. The waits behind an open transaction, which PGlite cannot make (one
// connection: no transaction is open while the relay reads), are driven through a stand-in
// relay that emits the real relay's events.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { JobEvents } from '../../../src/api/job-events.js';
import { ConfigError } from '../../../src/common/errors.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import {
  jobMetrics,
  relayMetrics,
  sinkMetrics,
  type ObservedRelay,
} from '../../../src/metrics/index.js';
import { OutboxRelay } from '../../../src/outbox/outbox-relay.js';
import { createOutboxTable } from '../../../src/outbox/outbox-table.js';
import type { RelayBacklog } from '../../../src/outbox/relay-backlog.js';
import type { RelayEventMap } from '../../../src/outbox/relay-events.js';
import { pglite } from '../../../src/pglite/index.js';
import { databaseSink } from '../../../src/sink/database-sink.js';
import { eachBatch } from '../../../src/sink/each-batch.js';
import { brokerWithCountedReadings, countJob } from '../../support/jobs/memory-job.js';
import { keysRoutedTo, writeOnPglite } from '../../support/jobs/outbox-fixture.js';
import { pgliteForTests } from '../../support/jobs/sink-fixture.js';
import { bound } from '../../support/timing.js';

const db = pgliteForTests();

/** The value of each series of `name` whose labels include `labels` (as printed). */
async function values(registry: Registry, name: string, labels = ''): Promise<number[]> {
  return (await registry.metrics())
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(labels))
    .map((line) => Number(line.slice(line.lastIndexOf(' ') + 1)));
}

/** The one value of `name` for the relay `labels` name. */
async function value(registry: Registry, name: string, labels: string): Promise<number> {
  const found = await values(registry, `stream_windows_relay_${name}`, labels);
  expect(found, name).toHaveLength(1);
  return found[0] as number;
}

let fixtures = 0;

/** A fresh outbox table and stream (or super stream of three partitions), and a relay over them. */
async function fresh(name = 'relay', to: 'stream' | 'superStream' = 'stream') {
  fixtures++;
  const table = `metered_outbox_${fixtures}`;
  const stream = `metered-${fixtures}`;
  const broker = new MemoryBroker();
  if (to === 'stream') broker.createStream(stream);
  else broker.createSuperStream(stream, { partitions: 3 });
  await createOutboxTable(pglite(db), table);
  const relay = new OutboxRelay({
    name,
    database: pglite(db),
    table,
    broker,
    ...(to === 'stream' ? { to: stream } : { toSuperStream: stream }),
    maxBatchRows: 4,
    pollIntervalMs: 5,
    retryDelayMs: 1,
  });
  /** Commits one transaction of `rows` rows, of event time `eventTime`, keyed `keys` in turn. */
  const write = (rows: number, eventTime = Date.now(), keys: readonly string[] = ['k0', 'k1']) =>
    writeOnPglite(
      db,
      table,
      Array.from({ length: rows }, (_, i) => ({
        key: keys[i % keys.length] as string,
        json: { i },
        eventTime,
      })),
      false,
    );
  return { broker, stream, relay, write, labels: `relay="${name}",stream="${stream}"` };
}

describe('relayMetrics', () => {
  it(
    'counts rows and batches published and a retry, and reads the backlog at scrape',
    async () => {
      const f = await fresh();
      const hourAgo = Date.now() - 3_600_000;
      await f.write(3, hourAgo);
      await f.write(3);
      await f.write(2);
      const registry = new Registry();
      const metrics = relayMetrics(f.relay, { registry });
      const of = (name: string) => value(registry, name, f.labels);
      // Before the run: every counter at 0, and the backlog read from the table.
      for (const name of [
        'rows_published_total',
        'batches_published_total',
        'retries_total',
        'waits_total',
        'wait_seconds_total',
        'rows_in_flight',
      ]) {
        expect(await of(name), name).toBe(0);
      }
      expect(await of('backlog_rows')).toBe(8);
      const age = await of('backlog_oldest_age_seconds');
      expect(age).toBeGreaterThanOrEqual(3_600);
      expect(age).toBeLessThan(3_600 + bound(60));

      // A lost confirm at the sixth publish: the relay resumes from where the stream stands.
      const fault = f.broker.injectFault({
        stream: f.stream,
        producer: 'relay',
        atPublish: 6,
        point: 'lose-confirm',
      });
      const summary = await f.relay.run({ untilCaughtUp: true });
      expect(fault.fired).toBe(true);
      expect(summary.retries).toBe(1);
      expect(await of('rows_published_total')).toBe(summary.published);
      expect(await of('batches_published_total')).toBe(summary.batches);
      expect(summary.batches).toBeGreaterThanOrEqual(2); // 8 rows, at most 4 a batch
      expect(f.broker.messages(f.stream)).toHaveLength(8);
      expect(await of('retries_total')).toBe(1);
      expect(await of('rows_in_flight')).toBe(0);
      expect(await of('backlog_rows')).toBe(0);
      expect(await of('backlog_oldest_age_seconds')).toBe(0);

      await f.write(2, hourAgo);
      expect(await of('backlog_rows')).toBe(2);
      expect(await of('backlog_oldest_age_seconds')).toBeGreaterThanOrEqual(3_600);
      metrics.close();
      metrics.close(); // twice is harmless
      expect(await registry.metrics()).not.toContain('stream_windows_relay_');
      await f.relay.close();
    },
    bound(30_000),
  );

  it(
    'observes a relay to a super stream under its name, the backlog past where every partition holds every row',
    async () => {
      const f = await fresh('relay', 'superStream');
      // Two keys of each partition's.
      const keys = [0, 1, 2].flatMap((partition) => keysRoutedTo(partition, 3, 2));
      const hourAgo = Date.now() - 3_600_000;
      await f.write(6, hourAgo, keys);
      await f.write(5, Date.now(), keys);
      const registry = new Registry();
      const metrics = relayMetrics(f.relay, { registry });
      const of = (name: string) => value(registry, name, f.labels);
      expect(await of('backlog_rows')).toBe(11);
      expect(await of('backlog_oldest_age_seconds')).toBeGreaterThanOrEqual(3_600);

      // A lost confirm on one partition while the others take the batch's other rows.
      const [partition] = f.broker.partitions(f.stream);
      const fault = f.broker.injectFault({
        stream: partition as string,
        producer: 'relay',
        atPublish: 2,
        point: 'lose-confirm',
      });
      const summary = await f.relay.run({ untilCaughtUp: true });
      expect(fault.fired).toBe(true);
      expect(await of('retries_total')).toBe(1);
      expect(await of('rows_published_total')).toBe(summary.published);
      expect(await of('batches_published_total')).toBe(summary.batches);
      const onPartitions = f.broker
        .partitions(f.stream)
        .reduce((sum, stream) => sum + f.broker.messages(stream).length, 0);
      expect(onPartitions).toBe(11);
      // Caught up: the partitions' last messages record the batch before theirs, and every row
      // after that is on its partition already.
      expect(await of('backlog_rows')).toBe(0);
      expect(await of('backlog_oldest_age_seconds')).toBe(0);
      await f.write(2, hourAgo, keys);
      expect(await of('backlog_rows')).toBe(2);
      metrics.close();
      await f.relay.close();
    },
    bound(30_000),
  );

  it("shares a registry with other relays and with jobs' and sinks' metrics", async () => {
    const one = await fresh('one');
    const two = await fresh('two');
    const registry = new Registry();
    const relays = [relayMetrics(one.relay, { registry }), relayMetrics(two.relay, { registry })];
    // A job observed after them: its metrics take the registry as it is.
    const job = jobMetrics(countJob(brokerWithCountedReadings(1)), { registry });
    const broker = new MemoryBroker();
    broker.createStream('in');
    const sink = sinkMetrics(
      databaseSink({
        name: 'sink',
        source: broker.source('in'),
        database: pglite(db),
        into: eachBatch({ apply: () => Promise.resolve() }),
      }),
      { registry },
    );
    expect(() => relayMetrics(one.relay, { registry })).toThrow(
      new ConfigError(
        'relay',
        'must differ in name or stream from every other relay on this registry',
        'one',
      ),
    );
    expect(await values(registry, 'stream_windows_relay_rows_published_total')).toEqual([0, 0]);
    relays[0]?.close();
    expect(await values(registry, 'stream_windows_relay_rows_published_total')).toEqual([0]);
    relays[1]?.close();
    expect(await registry.metrics()).not.toContain('stream_windows_relay_');
    job.close();
    sink.close();
    expect(await registry.metrics()).toBe('\n');
    await one.relay.close();
    await two.relay.close();
  });

  it('counts each wait behind an open transaction and its time, growing at each scrape', async () => {
    const events = new JobEvents<RelayEventMap>(() => undefined);
    const relay: ObservedRelay = {
      name: 'stand-in',
      stream: 'orders',
      on: (name, listener) => events.on(name, listener),
      inFlight: 0,
      backlog: () => Promise.resolve(emptyBacklog),
    };
    const registry = new Registry();
    const metrics = relayMetrics(relay, { registry });
    const labels = 'relay="stand-in",stream="orders"';
    const waited = () => value(registry, 'wait_seconds_total', labels);

    const began = performance.now();
    events.emit('waiting', { stream: 'orders', rows: 3, openTransaction: 700n });
    expect(await value(registry, 'waits_total', labels)).toBe(1);
    const first = await waited();
    expect(first).toBeGreaterThan(0);
    // Another transaction holds the gap next: one more wait, the same time still running.
    events.emit('waiting', { stream: 'orders', rows: 3, openTransaction: 705n });
    const second = await waited();
    expect(second).toBeGreaterThan(first);
    events.emit('published', {
      stream: 'orders',
      rows: 3,
      firstRowId: 1n,
      lastRowId: 3n,
      lastPublishingId: 1n,
    });
    const elapsed = (performance.now() - began) / 1000;
    const total = await waited();
    expect(total).toBeGreaterThan(second);
    expect(total).toBeLessThanOrEqual(elapsed);
    expect(await value(registry, 'waits_total', labels)).toBe(2);
    // Over: the time stays as it was.
    expect(await waited()).toBe(total);

    // A wait ends with a retry, or with the run.
    for (const end of ['retry', 'stopped'] as const) {
      events.emit('waiting', { stream: 'orders', rows: 1, openTransaction: 800n });
      const before = await waited();
      if (end === 'retry')
        events.emit('retry', { error: new Error('gone'), delayMs: 1, retries: 1 });
      else
        events.emit('stopped', {
          summary: { published: 3, batches: 1, retries: 1 },
          error: undefined,
        });
      const after = await waited();
      expect(await waited()).toBe(after);
      expect(after).toBeGreaterThan(before);
    }
    expect(await value(registry, 'waits_total', labels)).toBe(4);
    metrics.close();
  });

  it('leaves the backlog out of a scrape that cannot read it', async () => {
    const events = new JobEvents<RelayEventMap>(() => undefined);
    let backlog: () => Promise<RelayBacklog> = () => new Promise(() => undefined);
    const relay: ObservedRelay = {
      name: 'stalled',
      stream: 'orders',
      on: (name, listener) => events.on(name, listener),
      inFlight: 2,
      backlog: () => backlog(),
    };
    const registry = new Registry();
    const metrics = relayMetrics(relay, { registry, backlogTimeoutMs: 20 });
    const labels = 'relay="stalled",stream="orders"';
    expect(await values(registry, 'stream_windows_relay_backlog_rows', labels)).toEqual([]);
    expect(await values(registry, 'stream_windows_relay_rows_in_flight', labels)).toEqual([2]);
    backlog = () => Promise.resolve({ ...emptyBacklog, rows: 5n, oldestAgeMs: 1_500 });
    expect(await values(registry, 'stream_windows_relay_backlog_rows', labels)).toEqual([5]);
    expect(
      await values(registry, 'stream_windows_relay_backlog_oldest_age_seconds', labels),
    ).toEqual([1.5]);
    backlog = () => Promise.reject(new Error('database away'));
    expect(await values(registry, 'stream_windows_relay_backlog_rows', labels)).toEqual([]);
    expect(
      await values(registry, 'stream_windows_relay_backlog_oldest_age_seconds', labels),
    ).toEqual([]);
    metrics.close();
  });

  it('refuses what is not a relay, a registry or a timeout', async () => {
    const { relay } = await fresh();
    const registry = new Registry();
    expect(() => relayMetrics({} as ObservedRelay, { registry })).toThrow(
      new ConfigError('relay', 'must be an outbox relay (what outboxRelay() returns)', {}),
    );
    expect(() => relayMetrics(relay, {} as { registry: Registry })).toThrow(ConfigError);
    expect(() => relayMetrics(relay, { registry, backlogTimeoutMs: 0 })).toThrow(
      new ConfigError('backlogTimeoutMs', 'must be > 0 ms', 0),
    );
    // Nothing was registered by the refused calls.
    expect(await registry.metrics()).toBe('\n');
    await relay.close();
  });
});

const emptyBacklog: RelayBacklog = {
  stream: 'orders',
  lastPublishingId: 0n,
  position: undefined,
  rows: 0n,
  oldestAgeMs: undefined,
};
