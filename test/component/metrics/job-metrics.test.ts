import { Counter, register, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  aggregate,
  BrokerUnavailableError,
  ConfigError,
  PublishError,
  ResumePointError,
  RetentionGapError,
  SourceError,
  type LatePolicy,
  type Runner,
  type Source,
  type Target,
} from '../../../src/index.js';
import { MemoryBroker } from '../../../src/memory/index.js';
import { jobMetrics, LATENCY_BUCKETS, type ObservedJob } from '../../../src/metrics/index.js';
import { restartCause } from '../../../src/metrics/job-metric-set.js';
import { skipReference } from '../../../src/engine/skip-request.js';
import { forwarding } from '../../support/doubles/forwarding-target.js';
import {
  brokerWithCountedReadings,
  brokerWithReadings,
  publishOffsetZeroAsEarlierVersion,
  countJob,
  reading,
  results,
  type Reading,
} from '../../support/jobs/memory-job.js';

/** The scrape's text output as series (name and labels, as printed) to value. */
async function scrape(registry: Registry): Promise<Map<string, number>> {
  const text = await registry.metrics();
  return new Map(
    text
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => {
        const at = line.lastIndexOf(' ');
        return [line.slice(0, at), Number(line.slice(at + 1))];
      }),
  );
}

/** The series carrying every one of the job's `labels` (as printed: `a="x",b="y"`), without them. */
function seriesOf(series: Map<string, number>, labels: string): Map<string, number> {
  const pairs = labels.split(',');
  return new Map(
    [...series]
      .filter(([name]) => pairs.every((pair) => name.includes(pair)))
      .map(([name, value]) => {
        let rest = name;
        for (const pair of pairs)
          rest = rest.replace(`${pair},`, '').replace(`,${pair}`, '').replace(pair, '');
        return [rest.replace('{}', ''), value];
      }),
  );
}

/**
 * Readings over several minutes of 3 sensors: every 7th goes 2 minutes back (late), every
 * 5th is negative (filtered out), every 11th is from sensor 'bad', whose key throws (dead letter).
 */
function mixedReadings(count: number): Reading[] {
  return Array.from({ length: count }, (_, i) => {
    const sensor = i % 11 === 10 ? 'bad' : `s${i % 3}`;
    const seconds = i % 7 === 6 ? i * 10 - 120 : i * 10;
    return reading(sensor, i % 5 === 4 ? -i : i, seconds);
  });
}

function mixedJob(memory: MemoryBroker, late: LatePolicy, target: Target) {
  return aggregate<Reading>(memory.source('source'))
    .filter((r) => r.value >= 0)
    .tumbling('1m')
    .key((r) => {
      if (r.sensor === 'bad') throw new Error('no key');
      return r.sensor;
    })
    .late(late)
    .onError('dead-letter')
    .reduce((sum, r) => sum + r.value, 0)
    .to(target, { retryDelayMs: 0 });
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

describe('the Prometheus metrics of a job', () => {
  it('should count what the job read and stored, as the target stream holds it', async () => {
    const input = mixedReadings(120);
    const memory = brokerWithReadings(input, { chunkSize: 8 });
    const job = mixedJob(memory, 'side', memory.target('target', { producer: 'p' }));
    const registry = new Registry();
    jobMetrics(job, { registry });
    await job.run({ untilCaughtUp: true });

    const stored = results(memory);
    expect(stored.length).toBeGreaterThan(5);
    expect(sum(stored.map((r) => r.lateCount))).toBeGreaterThan(0);
    expect(sum(stored.map((r) => r.filtered))).toBeGreaterThan(0);
    expect(sum(stored.map((r) => r.deadLetterCount))).toBeGreaterThan(0);
    const last = stored.at(-1)?.lastOffset ?? -1n;
    const series = seriesOf(await scrape(registry), 'target="target",producer="p"');
    const counters = [...series].filter(([name]) => !name.includes('_seconds'));
    expect(new Map(counters)).toEqual(
      new Map([
        ['stream_windows_messages_read_total', input.length],
        ['stream_windows_steps_published_total', stored.length],
        ['stream_windows_outputs_published_total', sum(stored.map((r) => r.outputCount))],
        ['stream_windows_late_messages_total{outcome="kept"}', sum(stored.map((r) => r.lateCount))],
        ['stream_windows_late_messages_total{outcome="dropped"}', 0],
        ['stream_windows_filtered_messages_total', sum(stored.map((r) => r.filtered))],
        ['stream_windows_dead_letters_total', sum(stored.map((r) => r.deadLetterCount))],
        ['stream_windows_duplicates_total', 0],
        ['stream_windows_restarts_total{cause="BrokerUnavailableError"}', 0],
        ['stream_windows_restarts_total{cause="PublishError"}', 0],
        ['stream_windows_restarts_total{cause="SourceError"}', 0],
        ['stream_windows_restarts_total{cause="ResumePointError"}', 0],
        ['stream_windows_restarts_total{cause="other"}', 0],
        ['stream_windows_source_lag_failures_total{reason="timeout"}', 0],
        ['stream_windows_source_lag_failures_total{reason="error"}', 0],
        ['stream_windows_last_published_offset', Number(last)],
        ['stream_windows_results_in_flight', 0],
        // Read to the end: the open step is not published, but its messages were read.
        ['stream_windows_source_lag_messages', 0],
      ]),
    );
    // Every step has a window; all of them ended long before now (T0 is 2026-01-01).
    const steps = stored.length;
    const top = LATENCY_BUCKETS.at(-1) ?? 0;
    expect(series.get(`stream_windows_step_latency_seconds_bucket{le="${top}"}`)).toBe(0);
    expect(series.get('stream_windows_step_latency_seconds_bucket{le="+Inf"}')).toBe(steps);
    expect(series.get('stream_windows_step_latency_seconds_count')).toBe(steps);
    expect(series.get('stream_windows_step_processing_seconds_count')).toBe(steps);
    expect(series.get('stream_windows_step_processing_seconds_bucket{le="+Inf"}')).toBe(steps);
  });

  it('should count the late messages a job drops', async () => {
    const input = mixedReadings(60);
    const memory = brokerWithReadings(input);
    const job = mixedJob(memory, 'drop', memory.target('target', { producer: 'p' }));
    const registry = new Registry();
    jobMetrics(job, { registry, labels: { job_name: 'billing' } });
    await job.run({ untilCaughtUp: true });
    const dropped = sum(results(memory).map((r) => r.lateDropped));
    expect(dropped).toBeGreaterThan(0);
    const series = await scrape(registry);
    expect(
      series.get('stream_windows_late_messages_total{job_name="billing",outcome="dropped"}'),
    ).toBe(dropped);
    expect(
      series.get('stream_windows_late_messages_total{job_name="billing",outcome="kept"}'),
    ).toBe(0);
  });

  it('should count a restart by its cause, and the result for offset 0 an earlier version stored as a duplicate', async () => {
    const count = 5;
    const memory = brokerWithCountedReadings(count);
    // An earlier version stored offset 0 under id 0, which also meant "never published": the
    // job reads from the first offset and skips offset 0's step, a duplicate.
    await publishOffsetZeroAsEarlierVersion(memory);
    // The job's first write (offset 1) is stored but its confirm lost: it restarts, and
    // resumes after it from the broker's last publishing id, counting it neither way.
    memory.injectFault({ stream: 'target', atPublish: 1, point: 'lose-confirm' });
    const delivered = deliveries(memory.source('source'));
    const job = aggregate<Reading>(delivered)
      .count(1)
      .reduce((sum, r) => sum + r.value, 0)
      .to(memory.target('target', { producer: 'p' }), { retryDelayMs: 0 });
    const registry = new Registry();
    jobMetrics(job, { registry });
    const summary = await job.run({ untilCaughtUp: true });
    expect(summary).toEqual({ results: count - 2, duplicates: 1, restarts: 1 });
    expect(results(memory).map((r) => r.lastOffset)).toEqual([0n, 1n, 2n, 3n, 4n]);
    const series = seriesOf(await scrape(registry), 'target="target",producer="p"');
    expect(series.get('stream_windows_restarts_total{cause="PublishError"}')).toBe(1);
    expect(series.get('stream_windows_duplicates_total')).toBe(1);
    expect(series.get('stream_windows_steps_published_total')).toBe(count - 2);
    // Every message once, offset 0 too; at most what the source delivered (a chunk delivered
    // while the failure was being noticed is dropped unread, and read again after the restart).
    const read = series.get('stream_windows_messages_read_total') ?? 0;
    expect(read).toBeGreaterThanOrEqual(count);
    expect(read).toBeLessThanOrEqual(delivered.messages());
  });

  it('should name a restart by the class of its error, a retention gap as the SourceError it is', () => {
    expect(
      [
        new BrokerUnavailableError('down'),
        new PublishError('t', 1n, true, 'lost'),
        new SourceError('s', true, 'closed'),
        new RetentionGapError('s', 0n, 5n),
        new ResumePointError('t', 'p', true, 6, 'unavailable'),
        new Error('anything else'),
      ].map(restartCause),
    ).toEqual([
      'BrokerUnavailableError',
      'PublishError',
      'SourceError',
      'SourceError',
      'ResumePointError',
      'other',
    ]);
  });

  it('should keep two jobs on one registry apart by their labels', async () => {
    const memory = brokerWithCountedReadings(7);
    memory.createStream('other');
    const registry = new Registry();
    const first = countJob(memory, memory.target('target', { producer: 'one' }));
    const second = countJob(memory, memory.target('other', { producer: 'two' }));
    jobMetrics(first, { registry });
    jobMetrics(second, { registry });
    await first.run({ untilCaughtUp: true });
    const series = await scrape(registry);
    expect(series.get('stream_windows_steps_published_total{target="target",producer="one"}')).toBe(
      7,
    );
    expect(series.get('stream_windows_steps_published_total{target="other",producer="two"}')).toBe(
      0,
    );
    expect(series.get('stream_windows_last_published_offset{target="target",producer="one"}')).toBe(
      6,
    );
    // The second never started: no resume point, so no lag and no last offset yet.
    expect(series.has('stream_windows_source_lag_messages{target="other",producer="two"}')).toBe(
      false,
    );
    expect(series.has('stream_windows_last_published_offset{target="other",producer="two"}')).toBe(
      false,
    );
  });

  it("should remove a job's series on close, and the metrics with the last job", async () => {
    const memory = brokerWithCountedReadings(3);
    memory.createStream('other');
    const registry = new Registry();
    const first = countJob(memory, memory.target('target', { producer: 'one' }));
    const second = countJob(memory, memory.target('other', { producer: 'two' }));
    const one = jobMetrics(first, { registry });
    const two = jobMetrics(second, { registry });
    await first.run({ untilCaughtUp: true });
    one.close();
    one.close(); // twice is once
    const names = [...(await scrape(registry)).keys()];
    expect(names.filter((name) => name.includes('producer="one"'))).toEqual([]);
    expect(names.filter((name) => name.includes('producer="two"')).length).toBeGreaterThan(10);
    // Closed, the job is no longer observed: a second run counts nothing.
    await countJob(memory, memory.target('target', { producer: 'one' })).run({
      untilCaughtUp: true,
    });
    two.close();
    expect(registry.getMetricsAsArray()).toEqual([]);
    // And the registry takes a job again.
    jobMetrics(first, { registry });
    await first.run({ untilCaughtUp: true });
    expect(
      (await scrape(registry)).get(
        'stream_windows_messages_read_total{target="target",producer="one"}',
      ),
    ).toBe(0);
  });

  it('should show the offset and stage of the message that stopped a job, until it starts again', async () => {
    const memory = brokerWithCountedReadings(4);
    memory.append('source', [new TextEncoder().encode('{ not json')]); // offset 4
    const registry = new Registry();
    const job = countJob(memory);
    const metrics = jobMetrics(job, { registry });
    const stopped = 'stream_windows_stopped_offset{target="target",producer="p",stage="decode"}';
    await expect(job.run({ untilCaughtUp: true })).rejects.toMatchObject({ offset: 4n });
    expect((await scrape(registry)).get(stopped)).toBe(4);
    // Started again with the message skipped, it runs to the end: no stop to show.
    await memory.source('source').storeOffset(skipReference('target', 'p'), 4n);
    await job.run({ untilCaughtUp: true });
    expect([...(await scrape(registry)).keys()].filter((name) => name.includes('stopped'))).toEqual(
      [],
    );
    metrics.close();
    expect(registry.getMetricsAsArray()).toEqual([]);
  });

  it('should show no stopped offset for a stop a skip cannot step over', async () => {
    const memory = brokerWithCountedReadings(4);
    const registry = new Registry();
    const job = aggregate(memory.source('source'))
      .count(2)
      .reduce((n: number) => n + 1, 0)
      .to(memory.target('target', { producer: 'p' }), {
        encode: () => {
          throw new Error('cannot encode');
        },
        retryDelayMs: 0,
      });
    jobMetrics(job, { registry });
    await expect(job.run({ untilCaughtUp: true })).rejects.toMatchObject({ stage: 'encode' });
    const series = [...(await scrape(registry)).keys()];
    expect(series.filter((name) => name.includes('stream_windows_stopped_offset'))).toEqual([]);
    // The job's other series are there: the scrape itself is not empty.
    expect(series.length).toBeGreaterThan(0);
  });

  it('should report the lag of a source with a backlog the job has not read', async () => {
    const memory = brokerWithCountedReadings(4);
    const registry = new Registry();
    const job = countJob(memory);
    jobMetrics(job, { registry, lagCacheMs: 0 });
    await job.run({ untilCaughtUp: true });
    const backlog = 9;
    for (let i = 0; i < backlog; i++) memory.append('source', [new Uint8Array(0)]);
    const lag = 'stream_windows_source_lag_messages{target="target",producer="p"}';
    expect((await scrape(registry)).get(lag)).toBe(backlog);
  });

  it('should report no lag for an instance another one took over from, until it is activated again', async () => {
    const memory = brokerWithCountedReadings(5);
    const registry = new Registry();
    const listeners = new Map<string, (event: unknown) => void>();
    const job = {
      on: (name: string, listener: (event: unknown) => void) => {
        listeners.set(name, listener);
        return () => undefined;
      },
      inFlight: 0,
      source: memory.source('source'),
      target: memory.target('target', { producer: 'p' }),
    } as unknown as ObservedJob;
    jobMetrics(job, { registry, lagCacheMs: 0 });
    const lag = 'stream_windows_source_lag_messages{target="target",producer="p"}';
    const started = { lastPublishingId: 1n, from: 2n, sourceEnd: undefined, restarts: 0 };
    listeners.get('started')?.(started);
    expect((await scrape(registry)).get(lag)).toBe(3);
    listeners.get('deactivated')?.({ stream: 'source', nextOffset: 2n });
    expect((await scrape(registry)).has(lag)).toBe(false);
    listeners.get('started')?.({ ...started, lastPublishingId: 3n, from: 4n });
    expect((await scrape(registry)).get(lag)).toBe(1);
  });

  it('should report the whole source as lag for a job started from the first offset', async () => {
    const memory = brokerWithCountedReadings(6);
    const registry = new Registry();
    const job = countJob(memory);
    jobMetrics(job, { registry });
    const lag = 'stream_windows_source_lag_messages{target="target",producer="p"}';
    let atStart: Promise<Map<string, number>> | undefined;
    // Scraped when the job has its resume point and has read nothing yet.
    job.on('started', () => {
      atStart ??= scrape(registry);
    });
    await job.run({ untilCaughtUp: true });
    expect((await atStart)?.get(lag)).toBe(6);
  });

  it('should leave the lag out of a scrape whose end-offset query fails, and count it', async () => {
    const memory = brokerWithCountedReadings(2);
    const registry = new Registry();
    const job = countJob(memory);
    jobMetrics(job, { registry, lagCacheMs: 0 });
    await job.run({ untilCaughtUp: true });
    const lag = 'stream_windows_source_lag_messages{target="target",producer="p"}';
    expect((await scrape(registry)).get(lag)).toBe(0);
    memory.deleteStream('source');
    const series = seriesOf(await scrape(registry), 'target="target",producer="p"');
    expect(series.has('stream_windows_source_lag_messages')).toBe(false);
    expect(series.get('stream_windows_source_lag_failures_total{reason="error"}')).toBe(1);
  });

  it('should finish a scrape within its bound when the source never answers, asking it once', async () => {
    const memory = brokerWithCountedReadings(2);
    const counted = counting(memory.source('source'), () => new Promise<bigint>(() => undefined));
    const job = countJob(memory);
    const registry = new Registry();
    jobMetrics(withSource(job, counted), { registry, lagTimeoutMs: 20, lagCacheMs: 0 });
    await startedThenStopped(job);
    const first = seriesOf(await scrape(registry), 'target="target",producer="p"');
    const second = seriesOf(await scrape(registry), 'target="target",producer="p"');
    expect(first.has('stream_windows_source_lag_messages')).toBe(false);
    expect(second.get('stream_windows_source_lag_failures_total{reason="timeout"}')).toBe(2);
    // The second scrape waited for the question already under way instead of asking again.
    expect(counted.asked()).toBe(1);
  });

  it('should reuse an end offset younger than lagCacheMs, and ask at every scrape with 0', async () => {
    for (const [lagCacheMs, asked] of [
      [60_000, 1],
      [0, 3],
    ] as const) {
      const memory = brokerWithCountedReadings(2);
      const source = memory.source('source');
      const counted = counting(source, () => source.endOffset());
      const job = countJob(memory);
      const registry = new Registry();
      jobMetrics(withSource(job, counted), { registry, lagCacheMs });
      await job.run({ untilCaughtUp: true });
      for (let i = 0; i < 3; i++) await registry.metrics();
      expect(counted.asked(), `lagCacheMs ${lagCacheMs}`).toBe(asked);
    }
  });

  it('should read the results in flight at the scrape', async () => {
    const memory = brokerWithCountedReadings(1);
    const target = memory.target('target', { producer: 'p' });
    let release = (): void => undefined;
    let publishing = (): void => undefined;
    const published = new Promise<void>((resolve) => (publishing = resolve));
    const held: Target = {
      ...forwarding(target),
      publish: async (id, messages) => {
        publishing();
        await new Promise<void>((resolve) => (release = resolve));
        await target.publish(id, messages);
      },
    };
    const job = countJob(memory, held);
    const registry = new Registry();
    jobMetrics(job, { registry });
    const inFlight = 'stream_windows_results_in_flight{target="target",producer="p"}';
    const running = job.run({ untilCaughtUp: true });
    await published;
    expect((await scrape(registry)).get(inFlight)).toBe(1);
    release();
    await running;
    expect((await scrape(registry)).get(inFlight)).toBe(0);
  });

  it('should show the node the target writes to, move the series when it moves, and drop it while unknown', async () => {
    const memory = brokerWithCountedReadings(1);
    let node: { host: string; port: number } | undefined = { host: '10.0.0.1', port: 5552 };
    const located: Target = {
      ...forwarding(memory.target('target', { producer: 'p' })),
      get node() {
        return node;
      },
    };
    const registry = new Registry();
    const metrics = jobMetrics(countJob(memory, located), { registry });
    const series = (at: string): string =>
      `stream_windows_target_node_info{target="target",producer="p",node="${at}"}`;
    const nodeSeries = async (): Promise<[string, number][]> =>
      [...(await scrape(registry))].filter(([name]) => name.includes('target_node_info'));
    expect(await nodeSeries()).toEqual([[series('10.0.0.1:5552'), 1]]);
    node = { host: '10.0.0.2', port: 5552 };
    expect(await nodeSeries()).toEqual([[series('10.0.0.2:5552'), 1]]);
    node = undefined;
    expect(await nodeSeries()).toEqual([]);
    node = { host: '10.0.0.3', port: 5552 };
    expect(await nodeSeries()).toEqual([[series('10.0.0.3:5552'), 1]]);
    metrics.close();
    expect(await registry.metrics()).not.toContain('target_node_info');
  });

  it('should show no target node for a target that has none (the embedded broker)', async () => {
    const memory = brokerWithCountedReadings(1);
    const registry = new Registry();
    jobMetrics(countJob(memory), { registry });
    expect(await registry.metrics()).not.toContain('stream_windows_target_node_info{');
  });

  it("should leave prom-client's global registry untouched", async () => {
    const before = register.getMetricsAsArray().length;
    const memory = brokerWithCountedReadings(2);
    const job = countJob(memory);
    jobMetrics(job, { registry: new Registry() });
    await job.run({ untilCaughtUp: true });
    expect(register.getMetricsAsArray()).toHaveLength(before);
    expect(await register.metrics()).not.toContain('stream_windows_');
  });

  describe('its options', () => {
    const job = countJob(brokerWithCountedReadings(0));
    const given = (options: unknown) => () =>
      jobMetrics(job, options as Parameters<typeof jobMetrics>[1]);

    it.each([
      ['no registry', { registry: undefined }, 'registry must be a prom-client Registry'],
      ['a registry that is not one', { registry: {} }, 'registry must be a prom-client Registry'],
      ['labels not an object', { labels: 'billing' }, 'labels must be an object'],
      [
        'a label name Prometheus refuses',
        { labels: { 'job-name': 'x' } },
        'labels must have Prometheus label names',
      ],
      [
        'a reserved label name',
        { labels: { __name: 'x' } },
        'labels must have Prometheus label names',
      ],
      [
        'a label the metrics use',
        { labels: { cause: 'x' } },
        "labels must not use the metrics' own",
      ],
      [
        'a label value not a string',
        { labels: { job_name: 7 } },
        'labels.job_name must be a string',
      ],
      ['lagTimeoutMs 0', { lagTimeoutMs: 0 }, 'lagTimeoutMs must be > 0 ms, given: 0'],
      ['lagCacheMs below 0', { lagCacheMs: -1 }, 'lagCacheMs must be >= 0 ms, given: -1'],
    ])('should refuse %s with a ConfigError', (_, options, message) => {
      const withRegistry = { registry: new Registry(), ...options };
      expect(given(withRegistry)).toThrow(ConfigError);
      expect(given(withRegistry)).toThrow(message);
    });

    it('should refuse a second job with other label names, or the same labels, on one registry', () => {
      const registry = new Registry();
      jobMetrics(job, { registry, labels: { job_name: 'billing' } });
      expect(given({ registry, labels: { team: 'billing' } })).toThrow(
        'labels must have the names the other jobs on this registry have (job_name)',
      );
      expect(given({ registry, labels: { job_name: 'billing' } })).toThrow(
        'labels must differ from those of every other job on this registry',
      );
      expect(given({ registry, labels: { job_name: 'invoices' } })).not.toThrow();
    });

    it('should refuse a registry holding stream_windows_ metrics it did not register', () => {
      const registry = new Registry();
      new Counter({
        name: 'stream_windows_steps_published_total',
        help: 'x',
        registers: [registry],
      });
      expect(given({ registry })).toThrow(
        'registry must not hold stream_windows_ metrics that this jobMetrics did not register',
      );
      expect(registry.getMetricsAsArray()).toHaveLength(1);
    });
  });
});

/** `source` whose endOffset answers with `answer`, counting the questions. */
function counting(source: Source, answer: () => Promise<bigint>): Source & { asked: () => number } {
  let asked = 0;
  return {
    stream: source.stream,
    read: (from, signal) => source.read(from, signal),
    endOffset: () => {
      asked++;
      return answer();
    },
    asked: () => asked,
  };
}

/** `source`, counting the messages it delivered. */
function deliveries(source: Source): Source & { messages: () => number } {
  let messages = 0;
  return {
    stream: source.stream,
    async *read(from, signal) {
      for await (const chunk of source.read(from, signal)) {
        messages += chunk.count;
        yield chunk;
      }
    },
    endOffset: () => source.endOffset(),
    messages: () => messages,
  };
}

/** The job as the metrics see it, with another source (the runner keeps its own). */
function withSource(job: ObservedJob, source: Source): ObservedJob {
  return {
    on: (name, listener) => job.on(name, listener),
    get inFlight() {
      return job.inFlight;
    },
    source,
    target: job.target,
  };
}

/** Runs the job until its first result is stored, then stops it. */
async function startedThenStopped(job: Runner<Reading, number, number>): Promise<void> {
  const stop = new AbortController();
  const off = job.on('published', () => stop.abort());
  await job.run({ signal: stop.signal });
  off();
}
