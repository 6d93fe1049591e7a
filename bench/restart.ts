import {
  aggregate,
  jsonMessage,
  wholeStepOffset,
  type ResultWhere,
  type Source,
  type Target,
} from '../src/index.js';
import { writtenAfter } from '../src/engine/resume/written-after.js';
import { connect, type RabbitMQ } from '../src/rabbitmq/index.js';
import { hintReference } from '../src/rabbitmq/write/result-hint.js';
import { lookUpResult } from '../src/rabbitmq/write/result-lookup.js';
import {
  othersResults,
  producerTargets,
  publishResults,
} from '../test/support/results/stored-results.js';
import { interleavedRounds, median, ratioSpread } from './measure.js';
import { ratioRange, type CaseResult } from './report.js';

/** Results of other producers stored after the job's last one, one target stream each. */
export const RESTART_DISTANCES = [0, 10_000, 100_000] as const;

/** Readings before the restart (300 s of event time: 30 windows) and after it. */
const BEFORE = 3_000;
const AFTER = 200;
const PUBLISH_BATCH = 5_000;
const TIMEOUT_MS = 30_000;

interface Reading {
  readonly sensor: string;
  readonly value: number;
  readonly t: number;
}

/** Readings `first` .. `first + count - 1`, one every 100 ms of event time, over 10 sensors. */
const readings = (first: number, count: number): Uint8Array[] =>
  Array.from({ length: count }, (_, i) =>
    jsonMessage({
      sensor: `s${(first + i) % 10}`,
      value: 1,
      t: 100 * (first + i),
    } satisfies Reading),
  );

/**
 * The job: 10 s event-time windows with a 1 s grace, per sensor. Resolves when caught up, with
 * the ms from its start to its first new result (NaN when it published none).
 */
async function runJob(source: Source, target: Target): Promise<number> {
  const started = performance.now();
  let first = Number.NaN;
  const runner = aggregate<Reading>(source)
    .eventTime((r) => r.t)
    .tumbling('10s', { grace: '1s' })
    .key((r) => r.sensor)
    .reduce((sum, r) => sum + r.value, 0)
    .to(target, { retryDelayMs: 0 });
  runner.on('published', (event) => {
    if (!event.duplicate && Number.isNaN(first)) first = performance.now() - started;
  });
  await runner.run({ untilCaughtUp: true });
  return first;
}

/** A restart measured: the distance, and whether the job's first runs noted hints. */
interface Variant {
  readonly name: string;
  readonly distance: number;
  readonly hinted: boolean;
}

/** What a lookup read: messages, and reads (each a subscription). */
interface LookupCost {
  readonly messagesRead: number;
  readonly windows: number;
}

/**
 * An event-time job's restart on the real broker: the ms from the restart to its first new
 * result when `distance` results of two other producers were stored after its last one (what
 * a partition's failover pays when the other partitions write to the same target). Each
 * distance has its own target stream, on which one job per round (its own producer name) ran
 * over the same 3,000 readings and noted its result hint (`TargetOptions.resultHintMs: 2000`)
 * before the others wrote; each round restarts one of them over 200 more readings. At each
 * distance, as many jobs ran with `resultHintMs: 0`, the default (`-default`: no stored hint,
 * the restart reads on from its last source message's chunk timestamp less the clock-skew
 * margin, src/engine/resume/written-after.ts). Medians, min and max of `repeats` rounds after
 * a warm-up, the variants in rotating order; ratios: the restart's speed over distance 0's of
 * the same kind, in the same rounds. `values` also has what a lookup of the first job's result
 * read (messages, reads): from its hint (and whether the hint held the result), or for
 * `-default` from the time bound, next to the backward search without one (`search…`).
 */
export async function restartCases(
  url: string,
  repeats: number,
  distances: readonly number[] = RESTART_DISTANCES,
): Promise<CaseResult[]> {
  const rabbit = await connect(url);
  const streams: string[] = [];
  const jobs = repeats + 1;
  const variants: Variant[] = distances.flatMap((distance) => [
    { name: `${distance}-after`, distance, hinted: true },
    { name: `${distance}-after-default`, distance, hinted: false },
  ]);
  const smallest = Math.min(...distances);
  const producerOf = (variant: Variant, job: number) =>
    `${variant.hinted ? 'job' : 'plain'}-${job}`;
  try {
    const lookups = new Map<string, Record<string, number>>();
    const streamsOf = new Map<number, { source: string; target: string }>();
    for (const distance of distances) {
      const source = `bench-restart-in-${distance}-${process.pid}`;
      const target = `bench-restart-out-${distance}-${process.pid}`;
      for (const stream of [source, target]) {
        await rabbit.createStream(stream);
        streams.push(stream);
      }
      streamsOf.set(distance, { source, target });
      await feed(rabbit, source, readings(0, BEFORE));
      for (const variant of variants.filter((v) => v.distance === distance)) {
        for (let job = 0; job < jobs; job++) {
          await firstRun(rabbit, source, target, producerOf(variant, job), variant.hinted);
        }
      }
      await othersAfter(rabbit, target, distance);
      await feed(rabbit, source, readings(BEFORE, AFTER));
      lookups.set(`${distance}-after`, await hintedLookup(rabbit, target, 'job-0'));
      lookups.set(
        `${distance}-after-default`,
        await boundLookup(rabbit, source, target, 'plain-0'),
      );
    }
    const next = new Map(variants.map((variant) => [variant.name, 0]));
    const tasks = Object.fromEntries(
      variants.map((variant) => [
        variant.name,
        async () => {
          const job = next.get(variant.name) ?? 0;
          next.set(variant.name, job + 1);
          const producer = producerOf(variant, job);
          const { source, target } = streamsOf.get(variant.distance) ?? { source: '', target: '' };
          const publisher = rabbit.target(target, { producer });
          try {
            const ms = await runJob(rabbit.source(source), publisher);
            if (Number.isNaN(ms)) throw new Error(`restart bench: ${producer} published nothing`);
            return ms;
          } finally {
            await publisher.close();
          }
        },
      ]),
    );
    const rounds = await interleavedRounds(tasks, repeats);
    return variants.map((variant) => {
      const times = rounds[variant.name] ?? [];
      const ms = median(times);
      const base = variants.find((v) => v.distance === smallest && v.hinted === variant.hinted);
      const spread = ratioSpread(times, rounds[base?.name ?? ''] ?? []);
      const ratio = `distance-${smallest}`;
      return {
        name: `restart/${variant.name}`,
        kind: 'lookup',
        msgsPerSec: Number.NaN,
        ratios: { [ratio]: spread.median },
        values: {
          ...ratioRange(ratio, spread),
          ms,
          minMs: Math.min(...times),
          maxMs: Math.max(...times),
          ...lookups.get(variant.name),
        },
      };
    });
  } finally {
    for (const stream of streams) await rabbit.deleteStream(stream).catch(() => undefined);
    await rabbit.close();
  }
}

/** Writes `messages` to `stream` with an unnamed producer, resolving once all are confirmed. */
async function feed(rabbit: RabbitMQ, stream: string, messages: readonly Uint8Array[]) {
  const producer = rabbit.producer(stream);
  try {
    await Promise.all(messages.map((message) => producer.send(message)));
  } finally {
    await producer.close();
  }
}

/**
 * The job's first run as `producer`; `hinted`: with its target's hints, kept open until it
 * noted one.
 */
async function firstRun(
  rabbit: RabbitMQ,
  source: string,
  target: string,
  producer: string,
  hinted: boolean,
) {
  const publisher = rabbit.target(target, { producer, resultHintMs: hinted ? 2_000 : 0 });
  try {
    await runJob(rabbit.source(source), publisher);
    if (hinted) await hintOf(rabbit, target, producer);
  } finally {
    await publisher.close();
  }
}

/** The hint `producer`'s target noted, once there is one. */
async function hintOf(rabbit: RabbitMQ, target: string, producer: string): Promise<bigint> {
  const deadline = Date.now() + TIMEOUT_MS;
  const source = rabbit.source(target);
  for (;;) {
    const hint = await source.storedOffset(hintReference(target, producer));
    if (hint !== undefined) return hint;
    if (Date.now() > deadline) throw new Error(`restart bench: ${producer} noted no hint`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What a lookup of `producer`'s last result from its hint reads. */
async function hintedLookup(
  rabbit: RabbitMQ,
  target: string,
  producer: string,
): Promise<Record<string, number>> {
  const last = await lastIdOf(rabbit, target, producer);
  const hint = await hintOf(rabbit, target, producer);
  const lookup = await lookUpResult(rabbit.params, target, producer, last, TIMEOUT_MS, {}, hint);
  return {
    hintedMessagesRead: lookup.messagesRead,
    hintedReads: lookup.windows,
    hintHeldResult: lookup.hint === 'at-hint' ? 1 : 0,
  };
}

/**
 * What a lookup of `producer`'s last result reads from the bound a restart has (its source
 * message's chunk timestamp), and what the backward search without it reads.
 */
async function boundLookup(
  rabbit: RabbitMQ,
  source: string,
  target: string,
  producer: string,
): Promise<Record<string, number>> {
  const last = await lastIdOf(rabbit, target, producer);
  // The bound is the chunk timestamp of the step's last source message, as a restart's.
  const offset = wholeStepOffset(last);
  if (offset === undefined) throw new Error(`restart bench: ${producer} stored no whole step`);
  const where = writtenAfter(rabbit.source(source), offset);
  const lookUp = (bound: ResultWhere): Promise<LookupCost> =>
    lookUpResult(rabbit.params, target, producer, last, TIMEOUT_MS, {}, undefined, bound);
  const bounded = await lookUp(where);
  const search = await lookUp({});
  return {
    boundMessagesRead: bounded.messagesRead,
    boundReads: bounded.windows,
    searchMessagesRead: search.messagesRead,
    searchReads: search.windows,
  };
}

async function lastIdOf(rabbit: RabbitMQ, target: string, producer: string): Promise<bigint> {
  const publisher = rabbit.target(target, { producer, resultHintMs: 0 });
  try {
    return await publisher.lastPublishingId();
  } finally {
    await publisher.close();
  }
}

/** `count` results of two other producers, in batches each confirmed before the next. */
async function othersAfter(rabbit: RabbitMQ, stream: string, count: number) {
  const writes = othersResults(['billing', 'audit'], count, 0n);
  const { targetOf, close } = producerTargets(rabbit, stream);
  try {
    for (let at = 0; at < writes.length; at += PUBLISH_BATCH) {
      await publishResults(writes.slice(at, at + PUBLISH_BATCH), targetOf);
    }
  } finally {
    await close();
  }
}
