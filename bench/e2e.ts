import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { connect, Offset, type Client } from 'rabbitmq-stream-js-client';
import { aggregate } from '../src/core/pipeline.js';
import type { Source, Target } from '../src/core/ports.js';
import { connect as connectAdapter, parseStreamUrl } from '../src/rabbitmq/index.js';
import { readings, type Reading } from './corpus.js';
import { median, perSecond } from './measure.js';
import type { CaseResult } from './report.js';

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
function brokerUrl(): string | undefined {
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
 * windows with 100 keys, against the stock client's raw consume rate (a consumer that only
 * counts) on the same stream, in interleaved rounds. The same job with a target that
 * discards results gives the cost of publishing them.
 */
export async function e2eCases(messages: number, repeats: number): Promise<CaseResult[]> {
  const url = brokerUrl() as string;
  const stock = await connect(parseStreamUrl(url));
  const adapter = await connectAdapter(url);
  const source = `bench-e2e-source-${process.pid}`;
  const created: string[] = [];
  try {
    await adapter.createStream(source);
    created.push(source);
    await publishSource(stock, source, messages);

    const raw: number[] = [];
    const withPublish: number[] = [];
    const withoutPublish: number[] = [];
    for (let round = 0; round < repeats; round++) {
      raw.push(await rawConsume(stock, source, messages));
      const results = `bench-e2e-results-${process.pid}-${round}`;
      await adapter.createStream(results);
      created.push(results);
      const target = adapter.target(results, { producer: `bench-${round}` });
      withPublish.push(await runJob(adapter.source(source), target));
      withoutPublish.push(await runJob(adapter.source(source), discardingTarget(target)));
    }
    const rawRate = perSecond(messages, median(raw));
    const rate = perSecond(messages, median(withPublish));
    const noPublishRate = perSecond(messages, median(withoutPublish));
    return [
      {
        name: `tumbling-1s/${KEYS}-keys/rabbitmq`,
        kind: 'e2e',
        msgsPerSec: rate,
        ratios: { rawConsume: rate / rawRate },
        values: {
          rawConsumeMsgsPerSec: rawRate,
          resultsPublished: Math.floor((messages * MS_PER_MESSAGE) / 1000) - 1,
        },
      },
      {
        name: `tumbling-1s/${KEYS}-keys/rabbitmq-results-discarded`,
        kind: 'e2e',
        msgsPerSec: noPublishRate,
        ratios: { rawConsumeNoPublish: noPublishRate / rawRate },
        values: { publishingShareOfTime: 1 - rate / noPublishRate },
      },
    ];
  } finally {
    for (const stream of created) await adapter.deleteStream(stream).catch(() => undefined);
    await adapter.close();
    await stock.close();
  }
}

/** The source stream as a producer with the stock client writes it: JSON body, creation time. */
async function publishSource(client: Client, stream: string, messages: number): Promise<void> {
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

/** Milliseconds for the stock client's consumer to receive `messages` messages and only count them. */
async function rawConsume(client: Client, stream: string, messages: number): Promise<number> {
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
async function runJob(source: Source, target: Target): Promise<number> {
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
function discardingTarget(target: Target): Target {
  return {
    stream: target.stream,
    producer: `${target.producer}-discarded`,
    maxWriteBytes: target.maxWriteBytes,
    lastPublishingId: async () => 0n,
    hasPublished: async () => false,
    publish: async () => undefined,
  };
}
