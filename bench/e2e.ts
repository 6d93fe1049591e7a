import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect, Offset, type Client } from 'rabbitmq-stream-js-client';
import { aggregate } from '../src/dsl/pipeline.js';
import { MemoryBroker } from '../src/memory/broker.js';
import type { Source, SourceChunk, Target } from '../src/ports/ports.js';
import { encodeResult } from '../src/result-format/result-encoder.js';
import { StepProcessor, type StepProcessorConfig } from '../src/engine/step-processor.js';
import { writeSize } from '../src/ports/write-size.js';
import { tumbling } from '../src/windows/tumbling.js';
import { connect as connectAdapter, parseStreamUrl, type RabbitMQ } from '../src/rabbitmq/index.js';
import { corpusShape, readings, type Reading } from './corpus.js';
import { engineConfig, runEngine } from './hot-path/engine.js';
import { brokerCpu, notMeasured } from './broker-cpu.js';
import {
  costOf,
  interleavedRounds,
  median,
  perSecond,
  ratioSpread,
  spreadOf,
  type Cost,
} from './measure.js';
import { throughput, type CaseResult } from './report.js';

const STATUS_SCRIPT = fileURLToPath(new URL('../scripts/rabbitmq.sh', import.meta.url));
const KEYS = 100;
const START = Date.UTC(2025, 0, 1);
/** Event-time spacing: 1,000 messages per 1-second window. */
const MS_PER_MESSAGE = 1;
/** Publish frames of 500 messages, so the broker stores 500-message chunks as in §5. */
const PUBLISH_BATCH = 500;

/** Why the e2e cases cannot run here, or undefined when they can. */
export function e2eUnavailable(): string | undefined {
  if (brokerUrl() === undefined) {
    return 'no broker: set RABBITMQ_STREAM_URL or start one with scripts/rabbitmq.sh start';
  }
  return undefined;
}

/** RABBITMQ_STREAM_URL, else the local broker of scripts/rabbitmq.sh if it is running. */
export function brokerUrl(): string | undefined {
  const url = process.env.RABBITMQ_STREAM_URL;
  if (url !== undefined && url !== '') return url;
  try {
    return execFileSync(STATUS_SCRIPT, ['status'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined; // not running (or not root): the e2e cases say why they were skipped
  }
}

/**
 * Case 3: a `messages`-message source stream on the real broker, aggregated into 1-second
 * windows with 100 keys, in interleaved rounds against
 *   - `hotPath`: the same job in process, the Runner's synchronous work (StepProcessor and
 *     result encoding) over the very chunks the stream holds, read once before the rounds;
 *   - `processOnly`: the StepProcessor alone on them, as the hot-path case measures it;
 *   - `ownConsume`: this library's source reading the stream with nothing done per chunk,
 *     the copy-free consume floor;
 *   - `rawConsume`: the stock client's consumer that only counts.
 * The same job with a target that discards results gives the cost of publishing them, and
 * that job on the embedded broker holding the same chunks (`embeddedJob`) the Runner's own.
 * Every task's CPU time (this process, every thread) and the broker's are taken too.
 * Every ratio comes with the spread of its rounds (values `<ratio>Min`, `<ratio>Max`), and
 * `seriesBound` is what consuming and the hot path one after the other allow: the ratio to
 * the hot path of 1 / (1 / ownConsume + 1 / hotPath).
 */
export async function e2eCases(
  messages: number,
  repeats: number,
  url = brokerUrl() as string,
): Promise<CaseResult[]> {
  const stock = await connect(parseStreamUrl(url));
  const adapter = await connectAdapter(url);
  const source = `bench-e2e-source-${process.pid}`;
  const created: string[] = [];
  try {
    await adapter.createStream(source);
    created.push(source);
    await publishSource(stock, source, messages);
    const chunks = await readChunks(adapter.source(source), messages);
    const config = e2eProcessorConfig(messages);
    // Sizes results as the job's target does (frame_max); nothing is published through it.
    const sizing = adapter.target(source, { producer: 'bench' });
    const resultsPublished = Math.floor((messages * MS_PER_MESSAGE) / 1000) - 1;
    const inProcess = runHotPath(config, chunks, sizing.maxWriteBytes);
    if (inProcess !== resultsPublished) {
      throw new Error(
        `bench: the hot path gave ${inProcess} results, the job gives ${resultsPublished}`,
      );
    }

    const embedded = embeddedSource(chunks);
    const broker = brokerCpu(url);
    const brokerClock = broker.measured ? broker.cpuMs : undefined;
    const cost = (task: () => unknown): Promise<Cost> => costOf(task, brokerClock);
    let round = 0;
    const costs = await interleavedRounds(
      {
        job: async () => {
          const results = `bench-e2e-results-${process.pid}-${round++}`;
          await adapter.createStream(results);
          created.push(results);
          const target = adapter.target(results, { producer: 'bench' });
          return cost(() => runJob(adapter.source(source), target));
        },
        jobDiscarded: () => cost(() => runJob(adapter.source(source), discardingTarget(sizing))),
        embeddedJob: () => cost(() => runJob(embedded.source('source'), discardingTarget(sizing))),
        hotPath: () => cost(() => runHotPath(config, chunks, sizing.maxWriteBytes)),
        processOnly: () => cost(() => runEngine(config, chunks)),
        ownConsume: () => cost(() => ownConsume(adapter.source(source), messages)),
        rawConsume: () => cost(() => rawConsume(stock, source, messages)),
      },
      repeats,
    );
    const wall = (name: keyof typeof costs): number[] => costs[name].map((c) => c.wallMs);
    const rounds = {
      job: wall('job'),
      jobDiscarded: wall('jobDiscarded'),
      hotPath: wall('hotPath'),
      processOnly: wall('processOnly'),
      ownConsume: wall('ownConsume'),
      rawConsume: wall('rawConsume'),
    };
    const rate = (ms: readonly number[]): number => perSecond(messages, median(ms));
    const hotRate = rate(rounds.hotPath);
    const ownRate = rate(rounds.ownConsume);
    const ratios = (task: readonly number[]): [Record<string, number>, Record<string, number>] => {
      const spreads = {
        hotPath: ratioSpread(task, rounds.hotPath),
        processOnly: ratioSpread(task, rounds.processOnly),
        ownConsume: ratioSpread(task, rounds.ownConsume),
        rawConsume: ratioSpread(task, rounds.rawConsume),
      };
      const medians: Record<string, number> = {};
      const ranges: Record<string, number> = {};
      for (const [name, spread] of Object.entries(spreads)) {
        medians[name] = spread.median;
        ranges[`${name}Min`] = spread.min;
        ranges[`${name}Max`] = spread.max;
      }
      return [medians, ranges];
    };
    const [jobRatios, jobRanges] = ratios(rounds.job);
    const shares = rounds.job.map((ms, i) => 1 - (rounds.jobDiscarded[i] ?? Number.NaN) / ms);
    const [discardedRatios, discardedRanges] = ratios(rounds.jobDiscarded);
    const cpu = cpuPerMessage(costs, messages);
    return [
      {
        name: `tumbling-1s/${KEYS}-keys/rabbitmq`,
        kind: 'e2e',
        ...throughput(messages, rounds.job),
        ratios: jobRatios,
        values: {
          ...jobRanges,
          hotPathMsgsPerSec: hotRate,
          processOnlyMsgsPerSec: rate(rounds.processOnly),
          ownConsumeMsgsPerSec: ownRate,
          rawConsumeMsgsPerSec: rate(rounds.rawConsume),
          seriesBound: 1 / (1 / ownRate + 1 / hotRate) / hotRate,
          resultsPublished,
          ...cpu.job,
        },
        ...(broker.measured ? {} : { notes: [notMeasured(broker) ?? ''] }),
      },
      {
        name: `tumbling-1s/${KEYS}-keys/rabbitmq-results-discarded`,
        kind: 'e2e',
        ...throughput(messages, rounds.jobDiscarded),
        ratios: discardedRatios,
        values: {
          ...discardedRanges,
          publishingShareOfTime: 1 - median(rounds.jobDiscarded) / median(rounds.job),
          publishingShareMin: Math.min(...shares),
          publishingShareMax: Math.max(...shares),
          ...cpu.jobDiscarded,
        },
      },
    ];
  } finally {
    for (const stream of created) await adapter.deleteStream(stream).catch(() => undefined);
    await adapter.close();
    await stock.close();
  }
}

/**
 * CPU per message of the job (published or discarded), in µs, median and min–max of the rounds:
 * this process's (every thread) and the broker's when it is measured, and the job's CPU over
 * the sum of its parts measured in the same round, `ownConsume` + `hotPath` (`cpuOverParts`:
 * ratio of the medians, min–max of the per-round ratios; issue 22's target is <= 1.15). The
 * parts' own figures go with the published job.
 */
function cpuPerMessage(
  costs: Readonly<
    Record<'job' | 'jobDiscarded' | 'embeddedJob' | 'hotPath' | 'ownConsume', readonly Cost[]>
  >,
  messages: number,
): Record<'job' | 'jobDiscarded', Record<string, number>> {
  const us = (ms: number): number => (ms * 1000) / messages;
  const figures = (name: string, values: readonly number[]): Record<string, number> => {
    const spread = spreadOf(values.map(us));
    return {
      [name]: spread.median,
      [`${name}Min`]: spread.min,
      [`${name}Max`]: spread.max,
    };
  };
  const cpuOf = (list: readonly Cost[]): number[] => list.map((cost) => cost.cpuMs);
  const brokerOf = (list: readonly Cost[]): Record<string, number> => {
    const measured = list.flatMap((cost) => cost.brokerCpuMs ?? []);
    return measured.length === list.length ? figures('brokerCpuUsPerMsg', measured) : {};
  };
  const parts = costs.hotPath.map(
    (hot, round) => hot.cpuMs + (costs.ownConsume[round]?.cpuMs ?? Number.NaN),
  );
  const job = (list: readonly Cost[]): Record<string, number> => {
    const cpu = cpuOf(list);
    const perRound = cpu.map((ms, round) => ms / (parts[round] ?? Number.NaN));
    return {
      ...figures('cpuUsPerMsg', cpu),
      cpuOverParts: median(cpu) / median(parts),
      cpuOverPartsMin: Math.min(...perRound),
      cpuOverPartsMax: Math.max(...perRound),
      ...brokerOf(list),
    };
  };
  const ownBroker = brokerOf(costs.ownConsume);
  return {
    job: {
      ...job(costs.job),
      ...figures('hotPathCpuUsPerMsg', cpuOf(costs.hotPath)),
      ...figures('ownConsumeCpuUsPerMsg', cpuOf(costs.ownConsume)),
      ...(ownBroker.brokerCpuUsPerMsg === undefined
        ? {}
        : { ownConsumeBrokerCpuUsPerMsg: ownBroker.brokerCpuUsPerMsg }),
    },
    jobDiscarded: {
      ...job(costs.jobDiscarded),
      ...figures('embeddedJobCpuUsPerMsg', cpuOf(costs.embeddedJob)),
    },
  };
}

/**
 * The stream's chunks on the embedded broker: the same job there (results discarded) is the
 * Runner's work without a socket, which splits the job's CPU beyond its parts between the
 * Runner and the RabbitMQ read path.
 */
function embeddedSource(chunks: readonly SourceChunk[]): MemoryBroker {
  const broker = new MemoryBroker();
  broker.createStream('source');
  for (const chunk of chunks) {
    const messages = Array.from({ length: chunk.count }, (_, i) =>
      chunk.bytes.slice(chunk.starts[i], chunk.ends[i]),
    );
    broker.append('source', messages, { timestamp: chunk.timestamp });
  }
  return broker;
}

/** The StepProcessor config the e2e job builds: the hot-path engine's tumbling one, at 1 s. */
export function e2eProcessorConfig(
  messages: number,
): StepProcessorConfig<Reading, unknown, number | Reading> {
  return { ...engineConfig('tumbling-1m', corpusShape(messages, KEYS)), window: tumbling('1s') };
}

const METADATA = { source: 'bench', producer: 'bench', window: 'tumbling(1s)' };

/**
 * What the Runner does per chunk, in process: StepProcessor.process, then each result encoded
 * as the target gets it (the result format, data sections) and size-checked. Returns how
 * many results it encoded.
 */
export function runHotPath(
  config: StepProcessorConfig<Reading, unknown, number | Reading>,
  chunks: readonly SourceChunk[],
  maxWriteBytes: number,
): number {
  const processor = new StepProcessor(config);
  let results = 0;
  for (const chunk of chunks) {
    processor.process(chunk);
    for (const result of processor.ready) {
      const size = writeSize(encodeResult(result, METADATA, 'sections'));
      if (size > maxWriteBytes) throw new Error(`bench: a result of ${size} bytes is too large`);
      results++;
    }
    processor.ready.length = 0;
  }
  return results;
}

/** The first `messages` messages of `source`, as the chunks it hands over. */
export async function readChunks(source: Source, messages: number): Promise<SourceChunk[]> {
  const chunks: SourceChunk[] = [];
  let received = 0;
  const reading = new AbortController();
  for await (const chunk of source.read('first', reading.signal)) {
    chunks.push(chunk);
    received += chunk.count;
    if (received >= messages) break;
  }
  reading.abort();
  return chunks;
}

/** Milliseconds for `source` to hand over `messages` messages, nothing done with them. */
export async function ownConsume(source: Source, messages: number): Promise<number> {
  const started = performance.now();
  let received = 0;
  const reading = new AbortController();
  for await (const chunk of source.read('first', reading.signal)) {
    received += chunk.count;
    if (received >= messages) break;
  }
  const elapsed = performance.now() - started;
  reading.abort();
  return elapsed;
}

/** The source stream as a producer with the stock client writes it: JSON body, creation time. */
export async function publishSource(
  client: Client,
  stream: string,
  messages: number,
): Promise<void> {
  const publisher = await client.declarePublisher({ stream, maxChunkLength: PUBLISH_BATCH });
  let index = 0;
  for (const reading of readings({ messages, keys: KEYS, windowMessages: messages })) {
    await publisher.send(Buffer.from(JSON.stringify(reading)), {
      messageProperties: {
        contentType: 'application/json',
        creationTime: new Date(START + index * MS_PER_MESSAGE),
      },
    });
    index++;
  }
  await publisher.flush();
  await publisher.close();
  // The stream is complete once a consumer can read its last message.
  await rawConsume(client, stream, messages);
}

/**
 * The profiling scripts' source stream of `messages` readings on `adapter`'s broker, written
 * (with the stock client) only when it holds fewer: kept between runs.
 */
export async function profileSource(
  adapter: RabbitMQ,
  url: string,
  messages: number,
): Promise<string> {
  const stream = `bench-e2e-profile-${messages}`;
  await adapter.createStream(stream);
  if ((await adapter.source(stream).endOffset()) < BigInt(messages)) {
    const stock = await connect(parseStreamUrl(url));
    await publishSource(stock, stream, messages);
    await stock.close();
  }
  return stream;
}

/** Milliseconds for the stock client's consumer to receive `messages` messages and only count them. */
export async function rawConsume(
  client: Client,
  stream: string,
  messages: number,
): Promise<number> {
  const started = performance.now();
  let received = 0;
  let done: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => {
    done = resolve;
  });
  const consumer = await client.declareConsumer({ stream, offset: Offset.first() }, () => {
    received++;
    if (received === messages) done();
  });
  await finished;
  const elapsed = performance.now() - started;
  await consumer.close();
  return elapsed;
}

/** Milliseconds for the job to aggregate the whole stream (and publish its results to `target`). */
export async function runJob(source: Source, target: Target): Promise<number> {
  const started = performance.now();
  await aggregate<Reading>(source)
    .tumbling('1s')
    .key((reading) => reading.sensor)
    .reduce((total, reading) => total + reading.value, 0)
    .to(target)
    .run({ untilCaughtUp: true });
  return performance.now() - started;
}

/** The job's target minus the broker: results are encoded and size-checked, then dropped. */
export function discardingTarget(target: Target): Target {
  return {
    stream: target.stream,
    producer: `${target.producer}-discarded`,
    maxWriteBytes: target.maxWriteBytes,
    lastPublishingId: () => Promise.resolve(0n),
    hasPublished: () => Promise.resolve(false),
    readResult: () => Promise.resolve(undefined),
    publish: () => Promise.resolve(),
  };
}
